package redlock

import (
	"context"
	"sync"
	"time"

	"github.com/goredlock/goredlock/internal/clock"
)

// Lock is a lock held on a quorum of key servers until Until. It is a
// lease, declared lost a loss margin earlier (WithLossMargin) so that its
// holder hears of it first. Its methods are safe for concurrent use.
//
// The methods of a nil or zero Lock do not panic: it holds nothing, Done is
// closed, Name and Token are empty, Until is the zero time, Fence is 0, and
// Err, Extend, Release and KeepAlive return an error matching
// ErrInvalidArgument and ErrNotHeld.
type Lock struct {
	c     *Client
	o     *options // the client's, or the granting call's
	name  string
	key   string
	token string
	fence uint64   // 0 without WithFencing; never changes
	kind  holdKind // what it holds, and how its calls are made
	// callCtx is the acquiring call's context without its cancellation,
	// for the Lost hook; nil when there are no hooks.
	callCtx context.Context

	acquired time.Time // start of the winning attempt (or the pass), for WithMaxHold and WithMinHold; never changes
	chain    chain     // how far the lock was passed since the servers granted it (handover.go); never changes

	// op serialises Extend and Release and guards tails, so that nothing
	// re-creates a key Release deleted ("The calls of one lock go in order").
	op    sync.Mutex
	tails tails // per server, closed once the lock's last call to it finished

	mu sync.Mutex
	// life ends with the lock, with the final Err as its cause; it and the
	// expiry timer are made on first use ("The holder hears first").
	life       context.Context
	cancelLife context.CancelCauseFunc
	b          budget    // of the last grant or extension; sets the keep-alive cadence
	granted    time.Time // start of the last grant or extension
	until      time.Time // end of validity
	lossAt     time.Time // until less the loss margin: when the lock is declared lost
	err        error     // nil while held
	released   bool
	extensions int32
	expiry     clock.Timer // fires at lossAt; nil until life is made
	risk       *risk       // nil until something asks (risk.go)
}

// grant is what an attempt that was granted hands to its lock.
type grant struct {
	name, key, token string
	b                budget
	began            time.Time // of the winning attempt, or of the pass
	from             time.Time // of the grant or extension b is of, for a pass; zero: began
	chain            chain     // of passes (handover.go); zero: a chain begins at began
	tails            tails     // its calls, per server
	fence            uint64
	ctx              context.Context // the acquiring call's
	kind             holdKind
}

func newLock(c *Client, o *options, g grant) *Lock {
	l := &Lock{c: c, o: o, name: g.name, key: g.key, token: g.token, acquired: g.began, tails: g.tails, fence: g.fence, kind: g.kind, chain: g.chain}
	if g.from.IsZero() {
		g.from = g.began
	}
	if l.chain.began.IsZero() {
		l.chain.began = g.began
	}
	if c.hooks.Lost != nil || c.hooks.AtRisk != nil || c.hooks.Contended != nil {
		l.callCtx = context.WithoutCancel(g.ctx)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.setValidity(g.from, g.b)
	if c.hooks.Lost != nil {
		l.lifeLocked() // the hook must hear of a loss when it happens
	}
	if c.hooks.AtRisk != nil {
		l.armRisk() // and of a risk
	}
	return l
}

// lifeContext returns the lock's life, made with its timer on first use.
func (l *Lock) lifeContext() context.Context {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lifeLocked()
}

// lifeLocked is lifeContext with l.mu held.
func (l *Lock) lifeLocked() context.Context {
	if l.life == nil {
		l.life, l.cancelLife = context.WithCancelCause(context.Background())
		if l.err != nil {
			l.cancelLife(l.err)
		} else {
			l.expiry = l.c.clock.AfterFunc(l.lossAt.Sub(l.c.clock.Now()), func() { _ = l.Err() })
		}
	}
	return l.life
}

// setValidity records a grant or extension of b.ttl whose call started
// at start. l.mu must be held.
func (l *Lock) setValidity(start time.Time, b budget) {
	l.b, l.granted = b, start
	l.until = start.Add(b.ttl - drift(b.ttl, l.o.driftFactor))
	l.lossAt = l.until.Add(-b.margin)
}

// Name returns the lock's name, without the client's key prefix; for a
// set of names (AcquireAll), the names joined by commas (see Names).
func (l *Lock) Name() string {
	if l.zero() {
		return ""
	}
	return l.name
}

// Token returns the value that marks this holder's keys on the servers
// ("Tokens and ranks" in docs/design.md).
func (l *Lock) Token() string {
	if l.zero() {
		return ""
	}
	return l.token
}

// Until returns the end of the lock's validity on this process's monotonic
// clock: the start of the last successful Acquire or Extend call, plus its
// TTL, less the clock drift allowance. Work that must be exclusive must
// finish before it; the lock is declared lost a loss margin earlier.
func (l *Lock) Until() time.Time {
	if l.zero() {
		return time.Time{}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.until
}

// Done returns a channel that is closed when the lock is released or
// declared lost (a loss margin before Until), whichever comes first.
func (l *Lock) Done() <-chan struct{} {
	if l.zero() {
		return closedChan
	}
	return l.lifeContext().Done()
}

// closedChan is the Done of a nil Lock, which no one holds.
var closedChan = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// errNilLock is what the methods of a nil or zero Lock return: a program
// that ignored Acquire's error, or made a Lock itself, holds no lock.
var errNilLock error = &holdError{msg: prefix + "invalid argument: nil or zero Lock: it holds no lock",
	errs: []error{ErrInvalidArgument, ErrNotHeld}}

// zero reports whether l is nil or was not made by a Client (a zero
// Lock): it holds nothing, and has no client to ask.
func (l *Lock) zero() bool { return l == nil || l.c == nil }

// Err returns nil while the lock is held, ErrNotHeld once it was released,
// and ErrLockLost once it was declared lost before it was released: not
// extended in time, or found held by another token on a quorum. A
// primitive's hold reports an error that matches them and names the hold.
func (l *Lock) Err() error {
	if l.zero() {
		return errNilLock
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.checkExpiry()
	return l.err
}

// Extend pushes the lock's validity out to ttl from now, on a quorum of
// servers ("Extensions" in docs/design.md). Once the lock was released or
// declared lost it refuses with ErrNotHeld, asking no server. Otherwise an
// extension not granted is a *QuorumError matching ErrNotAcquired, the
// lock staying held until it would be declared lost anyway; when a quorum
// holds another token, the lock is lost at once (ErrLockLost).
func (l *Lock) Extend(ctx context.Context, ttl time.Duration) (err error) {
	if l.zero() {
		return errNilLock
	}
	if err := checkTTL(l.o, l.kind.name(), l.name, ttl); err != nil {
		return err
	}
	if h := l.c.hooks.Extended; h != nil {
		defer func() { h(ctx, l.name, err) }()
	}
	l.op.Lock()
	defer l.op.Unlock()
	if err := l.held(); err != nil {
		return err
	}
	c := l.c
	if err := c.enter(); err != nil {
		return err
	}
	defer c.exit()
	b := l.o.budget(ttl)
	start := c.clock.Now()
	f := fan{op: opExtend, name: l.name, key: l.key, token: l.token, ttl: l.o.keyTTL(ttl, l.kind.traits().delays), timeout: b.timeout, after: l.tails,
		kind: l.kind, quarantine: c.quarantineRule(l.o)}
	res := c.fanOut(ctx, f)
	c.settle(ctx, &f, &res, false)
	l.tails = res.tails
	t := res.tally
	c.logVotes(opExtend, l.name, t)
	left := validity(ttl, c.clock.Since(start), l.o.driftFactor)

	l.mu.Lock()
	defer l.mu.Unlock()
	l.checkExpiry()
	if l.err != nil {
		return holdErr(l.kind.name(), l.name, []error{l.err}, "was lost while it was being extended")
	}
	if t.won() && left > b.margin {
		l.setValidity(start, b)
		l.extensions++
		if l.expiry != nil {
			l.expiry.Reset(l.lossAt.Sub(c.clock.Now()))
		}
		l.extendedRisk()
		return nil
	}
	if t.heldElsewhere() {
		c.logger.Warn("redlock: lock taken by another holder", "lock", l.name)
		l.end(ErrLockLost)
		return newQuorumError("extend", l.kind.name(), l.name, 1, t, ctx.Err(), ErrLockLost, ErrHeldElsewhere)
	}
	l.failedExtension(ctx)
	return newQuorumError("extend", l.kind.name(), l.name, 1, t, ctx.Err(), ErrNotAcquired)
}

// held returns nil if the lock can still be extended.
func (l *Lock) held() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.checkExpiry()
	switch {
	case l.released:
		return holdErr(l.kind.name(), l.name, []error{ErrNotHeld}, "not held: it was released")
	case l.err != nil:
		return holdErr(l.kind.name(), l.name, []error{ErrNotHeld, l.err}, "not held: it was lost %v before it was to be extended",
			l.c.clock.Since(l.lossAt).Round(time.Millisecond))
	}
	return nil
}

// checkExpiry declares the lock lost once the loss margin before its Until
// is reached, whether or not the timer has fired yet. l.mu must be held.
func (l *Lock) checkExpiry() {
	// Since rather than Now: it reads only the monotonic clock.
	if l.err == nil && l.c.clock.Since(l.lossAt) >= 0 {
		l.c.logger.Warn("redlock: lock lost: not extended in time", "lock", l.name,
			"until", l.until.Sub(l.c.clock.Now()).Round(time.Millisecond))
		l.end(ErrLockLost)
	}
}

// end moves the lock to its final state, err (ErrNotHeld or ErrLockLost).
// l.mu must be held.
func (l *Lock) end(err error) {
	if l.err != nil {
		return
	}
	l.err = err
	if k := l.kind.name(); k != lockKind {
		// Made once, as Err may be called often: "redlock: lock lost"
		// would misname a permit.
		word := "not held"
		if err == ErrLockLost {
			word = "lost"
		}
		l.err = holdErr(k, l.name, []error{err}, "%s", word)
	}
	if l.life != nil {
		l.expiry.Stop()
		l.cancelLife(err)
	}
	l.endRisk()
	if h := l.c.hooks.Lost; h != nil && err == ErrLockLost {
		h(l.callCtx, l.name, l.c.clock.Since(l.acquired))
	}
}
