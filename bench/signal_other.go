//go:build !unix

package main

import (
	"errors"
	"io"
	"os"
)

// statesSupported says whether the degraded states can run here: they
// stop and continue processes with SIGSTOP and SIGCONT.
const statesSupported = false

var errNoSignals = errors.New("degraded node states need SIGSTOP and SIGCONT (unix)")

func pauseProcess(*os.Process) error  { return errNoSignals }
func resumeProcess(*os.Process) error { return errNoSignals }
func holdPort(int) (io.Closer, error) { return nil, errNoSignals }
