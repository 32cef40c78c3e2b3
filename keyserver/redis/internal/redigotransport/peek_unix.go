//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package redigotransport

import "syscall"

// canPeek says that peek works here.
const canPeek = true

// peek reads up to len(buf) bytes from the socket fd without taking them
// and without waiting: 0 and no error at the end of the stream, EAGAIN
// when there is nothing to read.
func peek(fd uintptr, buf []byte) (int, error) {
	for {
		n, _, err := syscall.Recvfrom(int(fd), buf, syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		if err != syscall.EINTR {
			return n, err
		}
	}
}

// take reads up to len(buf) bytes from the socket fd, whose descriptor Go
// keeps non-blocking, without waiting: 0 and no error at the end of the
// stream, EAGAIN when there is nothing to read.
func take(fd uintptr, buf []byte) (int, error) {
	for {
		n, err := syscall.Read(int(fd), buf)
		if err != syscall.EINTR {
			return max(n, 0), err
		}
	}
}
