package main

import "syscall"

// sysProcAttr kills a redis-server if this program dies before stopping it.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
