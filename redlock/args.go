package redlock

import (
	"time"

	"github.com/goredlock/goredlock/keyserver"
)

// MaxNameLen bounds a lock name, in bytes: every call sends the name to
// every server, and errors and logs quote it.
const MaxNameLen = 1024

// checkLock validates a lock name and TTL for Acquire, TryAcquire and Do.
func checkLock(o *options, name string, ttl time.Duration) error {
	switch {
	case name == "":
		return invalidArgument("empty lock name")
	case len(name) > MaxNameLen:
		return invalidArgument("lock name of %d bytes is longer than the %d allowed", len(name), MaxNameLen)
	}
	return checkTTL(o, name, ttl)
}

// checkTTL refuses a TTL that could never give a usable lock: one that the
// clock drift allowance and the loss margin use up.
func checkTTL(o *options, name string, ttl time.Duration) error {
	if ttl < keyserver.MinTTL {
		return invalidArgument("ttl %v of lock %q is under the minimum of %v", ttl, name, keyserver.MinTTL)
	}
	d := drift(ttl, o.driftFactor)
	if ttl <= d {
		return invalidArgument("ttl %v of lock %q is not longer than its clock drift allowance %v", ttl, name, d)
	}
	if m := o.marginFor(ttl); ttl-d <= m {
		return invalidArgument("ttl %v of lock %q leaves no validity beyond its loss margin %v (drift allowance %v)",
			ttl, name, m, d)
	}
	return nil
}
