package main

import "syscall"

// sysProcAttr kills a child (worker or Redis) if this process dies first.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
