//go:build !linux

package main

import "syscall"

// childAttrs is empty where the kernel cannot signal a child when its
// parent dies: if redlock is killed with SIGKILL there, COMMAND runs on
// after the lock expires.
func childAttrs() *syscall.SysProcAttr { return nil }
