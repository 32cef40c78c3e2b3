package redlock

import (
	"time"

	"github.com/goredlock/goredlock/internal/layout"
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
// The servers keep the lock's key for its TTL plus d (its validity is
// the TTL's, as without a delay), so every key server keeps one, and the
// lock runs the commands it would without. It applies to locks, not to
// the primitives' holds; refused callers wait through it as for a holder.
// A Client's own d is also how Inspect tells a lock's lease from its
// delay. d must be at most MaxLockDelay; 0, the default, means no delay.
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

// keyTTL is how long the servers keep the key of a hold with ttl: a
// lock's ttl plus its lock-delay (delayed: see holdKind.delays), so that
// the key outlives the lease by the delay whoever asks for it next; a
// primitive's hold has no delay. A release deletes the key, delay and all.
func (o *options) keyTTL(ttl time.Duration, delayed bool) time.Duration {
	if delayed {
		return ttl + o.lockDelay
	}
	return ttl
}

// splitDelay reads a server's lock key, which lives a lease and then the
// lock-delay d after it, as the lease alone: a key with d or less left is
// in its delay, held by nobody, and splitDelay returns the time left of
// the delay. A promise to a waiter (keyserver.Notifier) is set for a claim
// without a delay, and a key without a TTL has none to split; both are
// read as they are.
func splitDelay(s *keyserver.NameStatus, d time.Duration) time.Duration {
	l := &s.Lock
	switch {
	case d == 0 || l.Token == "" || l.Left < 0 || layout.IsPromise(l.Token):
		return 0
	case l.Left <= d:
		left := l.Left
		*l = keyserver.Hold{}
		return left
	}
	l.Left -= d
	return 0
}
