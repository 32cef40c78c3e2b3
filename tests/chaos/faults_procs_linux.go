package chaos

import (
	"os"
	"syscall"
	"unsafe"
)

// monoNow reads CLOCK_MONOTONIC, the clock Go's monotonic readings come
// from on Linux and which every process of the machine shares: the client
// processes' times and the parent's compare on it.
func monoNow() int64 {
	var ts syscall.Timespec
	const clockMonotonic = 1
	if _, _, e := syscall.Syscall(syscall.SYS_CLOCK_GETTIME, clockMonotonic, uintptr(unsafe.Pointer(&ts)), 0); e != 0 {
		panic("chaos: clock_gettime(CLOCK_MONOTONIC): " + e.Error())
	}
	return ts.Nano()
}

// childAttr makes a client process die with the test binary that started
// it, should that end without stopping it.
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}

// stopProcess and continueProcess stop and continue a process, as a
// stopped VM or a long pause of its runtime would.
func stopProcess(p *os.Process) error     { return p.Signal(syscall.SIGSTOP) }
func continueProcess(p *os.Process) error { return p.Signal(syscall.SIGCONT) }
