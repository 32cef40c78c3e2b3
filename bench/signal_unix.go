//go:build unix

package main

import (
	"io"
	"os"
	"syscall"
)

// statesSupported says whether the degraded states can run here.
const statesSupported = true

func pauseProcess(p *os.Process) error  { return p.Signal(syscall.SIGSTOP) }
func resumeProcess(p *os.Process) error { return p.Signal(syscall.SIGCONT) }

// holdPort binds 127.0.0.1:port without listening: connections to it are
// refused, and the port is not free for the kernel to pick as the local
// port of an outgoing connection. SO_REUSEADDR lets the bind succeed
// beside the dead server's connections in TIME_WAIT, and the server can
// bind the port again (it sets SO_REUSEADDR too) before the hold is closed.
func holdPort(port int) (io.Closer, error) {
	syscall.ForkLock.RLock()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
	if err == nil {
		syscall.CloseOnExec(fd)
	}
	syscall.ForkLock.RUnlock()
	if err != nil {
		return nil, os.NewSyscallError("socket", err)
	}
	if err := syscall.SetsockoptInt(fd, syscall.SOL_SOCKET, syscall.SO_REUSEADDR, 1); err != nil {
		syscall.Close(fd) //nolint:errcheck // reporting the first error
		return nil, os.NewSyscallError("setsockopt", err)
	}
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Port: port, Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		syscall.Close(fd) //nolint:errcheck // reporting the first error
		return nil, os.NewSyscallError("bind", err)
	}
	return heldPort(fd), nil
}

type heldPort int

func (h heldPort) Close() error { return syscall.Close(int(h)) }
