//go:build !unix

package main

import (
	"os"
	"syscall"
)

// forwarded are the signals redlock passes on to COMMAND.
var forwarded = []os.Signal{os.Interrupt, syscall.SIGTERM}
