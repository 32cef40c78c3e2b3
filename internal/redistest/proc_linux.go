package redistest

import "syscall"

// sysProcAttr kills the server if the test binary dies before its cleanup.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
