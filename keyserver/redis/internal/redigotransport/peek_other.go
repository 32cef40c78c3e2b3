//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package redigotransport

import "syscall"

// canPeek says that peek does not work here: every pipelined connection
// keeps a reader that reads at all times.
const canPeek = false

func peek(uintptr, []byte) (int, error) { return 0, syscall.EINVAL }

func take(uintptr, []byte) (int, error) { return 0, syscall.EINVAL }
