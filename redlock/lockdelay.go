package redlock

import (
	"time"

	"github.com/goredlock/goredlock/keyserver"
)

// MaxLockDelay bounds WithLockDelay: a name nobody may take for longer
// than this after a holder died is an outage, not a safety margin.
const MaxLockDelay = time.Minute

// WithLockDelay makes a lock whose holder lets it expire without a
// release stay ungranted for d after its expiry: each server refuses its
// name to every caller, of this process or any other, with this option or
// without, until d has passed there since the TTL of the lock's last grant
// or extension ran out, measured on the server's own clock. A release
// (Release, or Do and DoOrSkip when fn returns) ends the delay at once, and
// so does a lock kept alive to the end and then released: a holder that
// finishes costs nothing. Chubby and Consul call this lock-delay.
//
// It trades liveness for safety. A holder that a pause (GC, swapping, a
// stopped VM) or a partition kept from extending may wake up after its
// lock expired and, before it checks Err, still act as the holder for a
// moment: the delay gives it d to notice, during which nobody else holds
// the lock. The price is that a holder that really died keeps the name
// from everyone for its TTL plus d. Use it for jobs with side effects
// outside stores that check fencing tokens (an e-mail sent, a file
// written, a call to another service), with d longer than the longest
// pause you expect; where the store checks a fence (WithFencing), the
// fence already refuses the late writer, and the delay buys nothing.
//
// It applies to locks (Acquire, TryAcquire, Do, DoOrSkip); the
// primitives' holds ignore it. Refused callers see the delay as the
// holder's TTL left, and wait for it as for a holder (their patience may
// run out first: ErrHeldElsewhere). Every key server must implement
// keyserver.Delayer (the Redis, memory and static servers do): given to
// New, it fails with ErrInvalidArgument otherwise, and given to a call,
// the call does. A server that restarts without its keys loses the delay
// with them, as it loses the lock. d must be at most MaxLockDelay; 0, the
// default, means no delay, and costs nothing: only a lock taken with a
// delay runs the extra commands (on Redis its acquire is a script of three
// commands instead of one SET NX, and its release deletes two keys).
// See "Lock-delay" in docs/design.md.
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
		_, notifier := s.(keyserver.Notifier)
		_, fencer := s.(keyserver.Fencer)
		if _, ok := v.(keyserver.Notifier); notifier && !ok {
			return invalidArgument("key server %d (%T) is a keyserver.Notifier, but its Delayed view (%T) is not", i, s, v)
		}
		if _, ok := v.(keyserver.Fencer); fencer && !ok {
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

// delay is the lock-delay of the acquisition's calls: none for a
// primitive's hold.
func (a *acquisition) delay() time.Duration {
	if a.p != nil {
		return 0
	}
	return a.o.lockDelay
}

// delay is the lock-delay of the lock's calls: none for a primitive's
// hold.
func (l *Lock) delay() time.Duration {
	if l.prim != nil {
		return 0
	}
	return l.o.lockDelay
}
