//go:build unix

package main

import (
	"os"
	"syscall"
)

// forwarded are the signals redlock passes on to COMMAND: the contract's
// SIGINT and SIGTERM, and those whose default action would otherwise end
// redlock without releasing the lock and leave COMMAND running unguarded
// (a closed terminal's SIGHUP, SIGQUIT, and SIGUSR1/SIGUSR2, which
// programs use for log rotation or progress reports).
var forwarded = []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGUSR1, syscall.SIGUSR2}
