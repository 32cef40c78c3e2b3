package main

import "syscall"

// childAttrs makes the kernel send COMMAND SIGTERM if redlock dies first
// (SIGKILL, a crash): nothing would keep the lock alive any more, so
// COMMAND must stop before the lock expires and another holder starts.
func childAttrs() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
}
