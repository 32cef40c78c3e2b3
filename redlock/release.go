package redlock

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/goredlock/goredlock/internal/layout"
)

// Release gives the lock up on every server (a permit, a read or write
// hold, a leadership alike), ignoring ctx's cancellation and deadline:
// each server's call is bounded by the server timeout ("Release" in
// docs/design.md). It returns nil when a quorum deleted this
// holder's key; an error matching ErrNotHeld when the lock was lost or
// released before, or so many servers do not hold its token that no
// quorum can ("The even-N release" in docs/design.md); otherwise a
// *QuorumError: too few servers answered, and their keys expire with TTL.
// It is final either way: Done is closed and Err reports ErrNotHeld (or
// ErrLockLost). With WithMinHold, a lock released sooner than that after
// its grant has its keys' TTL cut to the rest of the minimum hold instead
// (nil when a quorum took the cut; "Scheduled jobs" in docs/design.md).
func (l *Lock) Release(ctx context.Context) error {
	if l.zero() {
		return errNilLock
	}
	l.op.Lock()
	defer l.op.Unlock()
	l.mu.Lock()
	if l.released {
		l.mu.Unlock()
		return holdErr(l.kind.name(), l.name, []error{ErrNotHeld}, "not held: it was already released")
	}
	l.released = true
	l.checkExpiry()
	lost := l.err != nil
	var p *pass
	if !lost {
		p = l.passing() // before end, which would mark it at risk
	}
	l.end(ErrNotHeld)
	b, expires := l.b, l.granted.Add(l.b.ttl)
	l.mu.Unlock()
	h := l.c.hooks.Released
	if h == nil {
		return l.passOrRelease(ctx, p, b, expires, lost)
	}
	held := l.c.clock.Since(l.acquired)
	err := l.passOrRelease(ctx, p, b, expires, lost)
	h(ctx, l.name, held, err)
	return err
}

// passOrRelease passes the lock as p, to a call of its client waiting for
// it (handover.go), or else sends Release's calls.
func (l *Lock) passOrRelease(ctx context.Context, p *pass, b budget, expires time.Time, lost bool) error {
	if p != nil && l.c.handTo(l.key, p) {
		return nil
	}
	err := l.release(ctx, b, expires, lost)
	if l.o.handOver >= 0 {
		l.c.unhold(l.key, l.token) // its client's next call asks the servers
	}
	return err
}

// release sends Release's calls for a lock whose keys expire no sooner
// than expires. Apart from Release so that Release's defers are inlined
// (see docs/benchmarks.md).
func (l *Lock) release(ctx context.Context, b budget, expires time.Time, lost bool) error {
	c := l.c
	if err := c.enter(); err != nil {
		return err
	}
	defer c.exit()
	// Sent even for a lost lock ("Release" in docs/design.md).
	f := fan{op: opRelease, name: l.name, key: l.key, token: l.token, timeout: b.timeout, after: l.tails, kind: l.kind, final: true,
		rule: untilKnownReleased}
	if l.o.minHold > 0 && !lost { // a clock read saved for most locks
		// Never beyond the rest of the lock's own TTL, or Release would
		// extend it; the keys were set no sooner than their call began, so
		// expires is no later than their end on the servers.
		now := c.clock.Now()
		// The cut is a release: keep carries no lock-delay.
		if keep := earlier(l.acquired.Add(l.o.minHold), expires).Sub(now); keep >= layout.MinTTL {
			f.op, f.ttl = opExtend, keep
		}
	}
	if ctx.Done() != nil {
		ctx = context.WithoutCancel(ctx)
	}
	res := c.fanOut(ctx, f)
	c.settle(ctx, &f, &res, false)
	t := res.tally
	c.logVotes(f.op, l.name, t)
	l.tails = res.tails
	c.released.note(l.key, l.tails)
	switch {
	case lost:
		return holdErr(l.kind.name(), l.name, []error{ErrNotHeld, ErrLockLost}, "not held: it had been lost before it was released")
	case t.won():
		return nil
	case t.refused > t.n-quorum(t.n):
		// No quorum can have held ours: for an even n, fewer than a
		// quorum of refusals ("The even-N release").
		return newQuorumError("release", l.kind.name(), l.name, 1, t, nil, ErrNotHeld)
	}
	return newQuorumError("release", l.kind.name(), l.name, 1, t, nil) // the servers that failed may still hold the key
}

// releases remembers, per key, the calls of this client's last release
// still running, for its next acquisition of the key to follow ("The calls
// of one lock go in order" in docs/design.md).
type releases struct {
	mu    sync.Mutex
	tails map[string]tails
	// kept is len(tails), read without mu: a release whose calls have all
	// finished, which is most, has nothing to note when nothing is kept.
	kept atomic.Int32
}

// maxReleases is how many keys releases remembers before it forgets the
// ones whose calls have all finished.
const maxReleases = 1024

// note records the running calls of a release of key; nil when none are.
func (r *releases) note(key string, t tails) {
	if t.done == nil && r.kept.Load() == 0 {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	defer func() { r.kept.Store(int32(len(r.tails))) }()
	if t.done == nil {
		delete(r.tails, key)
		return
	}
	if r.tails == nil {
		r.tails = make(map[string]tails)
	}
	if len(r.tails) >= maxReleases {
		for k, t := range r.tails {
			if finished(t.done) {
				delete(r.tails, k)
			}
		}
	}
	r.tails[key] = t
}

// take returns, once, the calls of the last release of key still running.
// They are another token's, so made is cleared (see tails.made).
func (r *releases) take(key string) tails {
	r.mu.Lock()
	defer r.mu.Unlock()
	t := r.tails[key]
	delete(r.tails, key)
	r.kept.Store(int32(len(r.tails)))
	if finished(t.done) {
		return tails{}
	}
	t.made = 0
	return t
}

// finished reports whether every channel of tails is closed.
func finished(tails []<-chan struct{}) bool {
	return !slices.ContainsFunc(tails, func(ch <-chan struct{}) bool { return !closed(ch) })
}

// closed reports whether ch is closed, without waiting.
func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}
