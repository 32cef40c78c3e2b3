//go:build unix && !linux

package main

import "syscall"

func sysProcAttr() *syscall.SysProcAttr { return nil }
