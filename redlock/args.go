package redlock

import (
	"time"

	"github.com/goredlock/goredlock/internal/layout"
)

// MaxNameLen bounds a lock name, in bytes: every call sends the name to
// every server, and errors and logs quote it.
const MaxNameLen = 1024

// checkHold validates the name and TTL of a hold of kind k.
func checkHold(o *options, k kindName, name string, ttl time.Duration) error {
	if err := checkName(k.primitive(), name); err != nil {
		return err
	}
	return checkTTL(o, k, name, ttl)
}

// checkName refuses an empty name and one longer than MaxNameLen; of
// says whose name it is ("lock"), "" for any. The words are joined only
// for an error: a call checks its name every time.
func checkName(of, name string) error {
	if name != "" && len(name) <= MaxNameLen {
		return nil
	}
	noun := "name"
	if of != "" {
		noun = of + " name"
	}
	switch {
	case name == "":
		return invalidArgument("empty %s", noun)
	case len(name) > MaxNameLen:
		return invalidArgument("%s of %d bytes is longer than the %d allowed", noun, len(name), MaxNameLen)
	}
	return nil
}

// checkTTL refuses a TTL that could never give a usable hold of kind k:
// one that the clock drift allowance and the loss margin use up.
func checkTTL(o *options, k kindName, name string, ttl time.Duration) error {
	if ttl < layout.MinTTL {
		return invalidArgument("ttl %v of %s is under the minimum of %v", ttl, k.of(name), layout.MinTTL)
	}
	d := drift(ttl, o.driftFactor)
	if ttl <= d {
		return invalidArgument("ttl %v of %s is not longer than its clock drift allowance %v", ttl, k.of(name), d)
	}
	if m := o.marginFor(ttl); ttl-d <= m {
		return invalidArgument("ttl %v of %s leaves no validity beyond its loss margin %v (drift allowance %v)",
			ttl, k.of(name), m, d)
	}
	return nil
}
