//go:build !linux

package chaos

import (
	"errors"
	"os"
	"syscall"
	"time"
)

// monoNow stands in for CLOCK_MONOTONIC with the wall clock, which every
// process of the machine shares too, less precisely.
func monoNow() int64 { return time.Now().UnixNano() }

func childAttr() *syscall.SysProcAttr { return nil }

var errNoStop = errors.New("stopping a process is implemented on Linux only")

func stopProcess(*os.Process) error     { return errNoStop }
func continueProcess(*os.Process) error { return errNoStop }
