package redlock

import (
	"time"

	"github.com/goredlock/goredlock/keyserver"
)

// MaxLockDelay bounds WithLockDelay: a name nobody may take for longer
// than this after a holder died is an outage, not a safety margin.
const MaxLockDelay = time.Minute

// WithLockDelay keeps a lock whose holder let it expire without a release
// ungranted for d after its expiry: each server refuses its name to every
// caller until d has passed there, on its own clock. A release ends the
// delay at once, so a holder that finishes costs nothing. It gives a holder
// that a pause or a partition kept from extending d to notice, while a
// dead holder keeps the name for its TTL plus d: use it for side effects
// outside stores that check fencing tokens ("Lock-delay" in
// docs/design.md).
//
// It applies to locks, not to the primitives' holds; refused callers wait
// through it as for a holder. Every key server must implement
// keyserver.Delayer, or New (or the call) fails with ErrInvalidArgument.
// d must be at most MaxLockDelay; 0, the default, means no delay and costs
// nothing.
func WithLockDelay(d time.Duration) Option {
	return func(o *options) {
		switch {
		case d < 0:
			o.invalid("lock delay %v is negative", d)
		case d > MaxLockDelay:
			o.invalid("lock delay %v is longer than the %v allowed", d, MaxLockDelay)
		default:
			o.lockDelay = d
		}
	}
}

// noDelay is fan.delay for a call made through Delayed(0): the lock has a
// delay, but this call (a cut to WithMinHold's rest) must leave none.
const noDelay time.Duration = -1

// checkDelayers refuses a lock-delay over servers that cannot keep one,
// or whose view (keyserver.Delayer) lacks an interface of the server's
// that the lock's calls use.
func checkDelayers(servers []keyserver.KeyServer) error {
	for i, s := range servers {
		ds, ok := s.(keyserver.Delayer)
		if !ok {
			return invalidArgument("WithLockDelay needs every key server to implement keyserver.Delayer; server %d (%T) does not", i, s)
		}
		v := ds.Delayed(0)
		if implements[keyserver.Notifier](s) && !implements[keyserver.Notifier](v) {
			return invalidArgument("key server %d (%T) is a keyserver.Notifier, but its Delayed view (%T) is not", i, s, v)
		}
		if implements[keyserver.Fencer](s) && !implements[keyserver.Fencer](v) {
			return invalidArgument("key server %d (%T) is a keyserver.Fencer, but its Delayed view (%T) is not", i, s, v)
		}
	}
	return nil
}

// checkLockDelay refuses a call's lock-delay when a server cannot keep it.
func (c *Client) checkLockDelay(o *options) error {
	if o.lockDelay == 0 {
		return nil
	}
	return checkDelayers(c.servers)
}

// delayed is ks as a call of a lock with delay d sees it (see fan.delay).
func delayed(ks keyserver.KeyServer, d time.Duration) keyserver.KeyServer {
	ds, ok := ks.(keyserver.Delayer)
	if !ok { // checked by New or the call: not reached
		return ks
	}
	return ds.Delayed(max(d, 0))
}

// delayOf is the lock-delay of the calls of a lock, or of a primitive's
// hold (prim), which has none.
func (o *options) delayOf(prim bool) time.Duration {
	if prim {
		return 0
	}
	return o.lockDelay
}
