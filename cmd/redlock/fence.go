package main

import (
	"errors"

	"github.com/goredlock/goredlock/redlock"
)

// SEAM(fencing): --fence needs redlock.WithFencing and (*redlock.Lock).Fence,
// which the core does not have yet. Once it does, these two functions become
//
//	func fenceOption() (redlock.Option, error) { return redlock.WithFencing(), nil }
//	func fenceOf(l *redlock.Lock) uint64        { return l.Fence() }
//
// TestFence (run_test.go) follows fenceOption: today it checks that --fence
// is a usage error, afterwards that $REDLOCK_FENCE grows from run to run.

// fenceOption returns the client option that makes every grant carry a
// fencing token, or why this build cannot give one (a usage error: no
// server is contacted).
func fenceOption() (redlock.Option, error) {
	return nil, errors.New("fencing is not supported by this build")
}

// fenceOf returns the lock's fencing token, for $REDLOCK_FENCE.
func fenceOf(*redlock.Lock) uint64 { return 0 }
