package redlock

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/goredlock/goredlock/internal/clock"
	"github.com/goredlock/goredlock/keyserver"
)

// Lock is a lock held on a quorum of key servers until Until. It is a lease:
// once Until passes without an Extend, another process may take it. Its
// methods are safe for concurrent use.
type Lock struct {
	c     *Client
	name  string
	key   string
	token string
	ttl   time.Duration // of the last grant or extension; sets the keep-alive cadence

	acquired time.Time // start of the winning attempt, for WithMaxHold; never changes

	op sync.Mutex // serialises Extend and Release, so a late Extend never re-creates a released key

	// life ends with the lock; its cause is the final Err. Done is its
	// Done, so that Do and KeepAlive can hang work off it without a
	// goroutine.
	life       context.Context
	cancelLife context.CancelCauseFunc

	mu         sync.Mutex
	granted    time.Time // start of the last grant or extension, for the keep-alive cadence
	until      time.Time
	err        error // nil while held
	released   bool
	extensions int
	expiry     clock.Timer
}

func newLock(c *Client, name, key, token string, ttl time.Duration, start time.Time) *Lock {
	l := &Lock{c: c, name: name, key: key, token: token, ttl: ttl,
		acquired: start, granted: start, until: start.Add(ttl - drift(ttl, c.driftFactor))}
	l.life, l.cancelLife = context.WithCancelCause(context.Background())
	until := l.until
	l.mu.Lock()
	l.expiry = c.clock.AfterFunc(until.Sub(c.clock.Now()), l.expire)
	l.mu.Unlock()
	return l
}

// Name returns the lock's name, without the client's key prefix.
func (l *Lock) Name() string { return l.name }

// Token returns the random value that marks this holder's keys on the
// servers; a new one is drawn for every attempt.
func (l *Lock) Token() string { return l.token }

// Until returns the end of the lock's validity on this process's monotonic
// clock: the time of the last successful Acquire or Extend call's start,
// plus its TTL, less the clock drift allowance. Work that must be exclusive
// must finish before it.
func (l *Lock) Until() time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.until
}

// Done returns a channel that is closed when the lock is released or its
// validity runs out, whichever comes first.
func (l *Lock) Done() <-chan struct{} { return l.life.Done() }

// Err returns nil while the lock is held, ErrNotHeld once it was released,
// and ErrLockLost once its validity ran out (or a quorum of servers was
// found holding another token) before it was released.
func (l *Lock) Err() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.checkExpiry()
	return l.err
}

// Extend pushes the lock's validity out to ttl from now, on a quorum of
// servers. It refuses with ErrNotHeld, without contacting any server, once
// the lock was released or its validity ran out: an expired lock may
// already be someone else's. A server that lost the key (a restart) gets it
// back.
//
// When the servers do not grant the extension the error satisfies
// errors.Is(err, ErrNotAcquired) and the lock stays valid until its old
// Until; when a quorum holds another token, the lock is lost at once and
// the error satisfies errors.Is(err, ErrLockLost).
func (l *Lock) Extend(ctx context.Context, ttl time.Duration) error {
	if err := l.c.checkTTL(l.name, ttl); err != nil {
		return err
	}
	l.op.Lock()
	defer l.op.Unlock()
	if err := l.held(); err != nil {
		return err
	}
	c := l.c
	start := c.clock.Now()
	t, settle := c.fanOut(ctx, c.timeoutFor(ttl), "extend", l.name,
		func(ctx context.Context, ks keyserver.KeyServer) (bool, error) {
			return ks.Extend(ctx, l.key, l.token, ttl)
		}, nil)
	settle(false)
	c.logVotes("extend", l.name, t)
	left := validity(ttl, c.clock.Since(start), c.driftFactor)

	l.mu.Lock()
	defer l.mu.Unlock()
	l.checkExpiry()
	if l.err != nil {
		return fmt.Errorf("%w: lock %q ran out while it was being extended", l.err, l.name)
	}
	if t.won() && left > 0 {
		l.until = start.Add(ttl - drift(ttl, c.driftFactor))
		l.granted = start
		l.ttl = ttl
		l.extensions++
		l.expiry.Reset(l.until.Sub(c.clock.Now()))
		return nil
	}
	qe := &quorumError{sentinel: ErrNotAcquired, what: fmt.Sprintf("extension of lock %q not granted", l.name), tally: t, ctxErr: ctx.Err()}
	if qe.contended() {
		c.logger.Warn("redlock: lock taken by another holder", "lock", l.name)
		l.end(ErrLockLost)
		qe.sentinel = ErrLockLost
	}
	return qe
}

// Release gives the lock up on every server. It returns nil when a quorum
// deleted this holder's key, and an error satisfying errors.Is(err,
// ErrNotHeld) when the lock had already run out, was released before, or
// was no longer this holder's on a quorum. Any other error means too few
// servers answered; the keys they keep expire with their TTL.
//
// Release is final either way: Done is closed and Err reports ErrNotHeld
// (or ErrLockLost if the validity ran out first).
func (l *Lock) Release(ctx context.Context) error {
	l.op.Lock()
	defer l.op.Unlock()
	l.mu.Lock()
	if l.released {
		l.mu.Unlock()
		return fmt.Errorf("%w: lock %q was already released", ErrNotHeld, l.name)
	}
	l.released = true
	l.checkExpiry()
	expired := l.err != nil
	l.end(ErrNotHeld)
	l.mu.Unlock()

	c := l.c
	// Sent even for an expired lock: our keys may still sit on servers
	// whose clocks run slow. Release is owner-checked, so a new holder's
	// keys are safe.
	t, settle := c.fanOut(ctx, c.timeoutFor(l.ttl), "release", l.name,
		func(ctx context.Context, ks keyserver.KeyServer) (bool, error) {
			return ks.Release(ctx, l.key, l.token)
		}, nil)
	settle(false)
	c.logVotes("release", l.name, t)
	switch {
	case expired:
		return fmt.Errorf("%w: lock %q had run out before it was released", ErrNotHeld, l.name)
	case t.won():
		return nil
	}
	qe := &quorumError{sentinel: ErrNotHeld, what: fmt.Sprintf("release of lock %q not confirmed", l.name), tally: t, ctxErr: ctx.Err()}
	if !qe.contended() {
		qe.sentinel = nil // the servers that failed may still hold the key
	}
	return qe
}

// held returns nil if the lock can still be extended.
func (l *Lock) held() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.checkExpiry()
	switch {
	case l.released:
		return fmt.Errorf("%w: lock %q was released", ErrNotHeld, l.name)
	case l.err != nil:
		return fmt.Errorf("%w: lock %q ran out at %v", ErrNotHeld, l.name, l.until)
	}
	return nil
}

// expire runs when the expiry timer fires.
func (l *Lock) expire() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.checkExpiry()
}

// checkExpiry marks the lock lost once its validity has run out, whether or
// not the timer has fired yet. l.mu must be held.
func (l *Lock) checkExpiry() {
	if l.err == nil && !l.c.clock.Now().Before(l.until) {
		l.c.logger.Warn("redlock: lock validity ran out", "lock", l.name)
		l.end(ErrLockLost)
	}
}

// end moves the lock to its final state. l.mu must be held.
func (l *Lock) end(err error) {
	if l.err != nil {
		return
	}
	l.err = err
	l.expiry.Stop()
	l.cancelLife(err)
}
