package redlock

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/goredlock/goredlock/keyserver"
)

// Release gives the lock up on every server. It returns nil when a quorum
// deleted this holder's key, and an error satisfying errors.Is(err,
// ErrNotHeld) when the lock had already been declared lost, was released
// before, or was no longer this holder's on a quorum: so many servers
// answered that another token holds the key that no quorum can hold this
// holder's (more than N − quorum of them: two of four, as two of three).
// Any other error is a *QuorumError saying too few servers answered; the
// keys they keep expire with their TTL. The same holds for a permit, a
// read or write hold and a leadership.
//
// Release runs even when ctx is already cancelled: it ignores ctx's
// cancellation and deadline, and each server's call is bounded by the
// server timeout. On each server the delete is sent after every earlier
// call of this lock to that server has finished, so that a straggling
// Acquire or Extend cannot re-create the key. Release returns as soon as
// the answers tell which of the three it is (a failed server does not end
// the count while the servers still to answer could make it not held);
// the rest finishes in the background, and Client.Close waits for it.
//
// Release is final either way: Done is closed and Err reports ErrNotHeld
// (or ErrLockLost if the lock was lost first).
//
// With WithMinHold, given to the client or to the call that acquired the
// lock, a lock released sooner than that after its grant keeps its keys
// until then: Release cuts their TTL to what is left of the minimum hold
// instead of deleting them, and returns nil when a quorum took the cut.
// The cut never lengthens the lock: a minimum hold that outlasts the
// lock's TTL keeps the keys only as long as the last grant or extension
// left them (a 1 s lock with a 5 s minimum hold is free after 1 s).
func (l *Lock) Release(ctx context.Context) error {
	if l.zero() {
		return errNilLock
	}
	l.op.Lock()
	defer l.op.Unlock()
	l.mu.Lock()
	if l.released {
		l.mu.Unlock()
		return holdErr(l.kind(), l.name, []error{ErrNotHeld}, "not held: it was already released")
	}
	l.released = true
	l.checkExpiry()
	lost := l.err != nil
	l.end(ErrNotHeld)
	b, expires := l.b, l.granted.Add(l.b.ttl)
	l.mu.Unlock()
	h := l.c.hooks.Released
	if h == nil {
		return l.release(ctx, b, expires, lost)
	}
	held := l.c.clock.Since(l.acquired)
	err := l.release(ctx, b, expires, lost)
	h(ctx, l.name, held, err)
	return err
}

// release sends Release's calls, for a lock held with budget b, whose
// keys expire on the servers no sooner than expires (the start of its
// last grant or extension plus its TTL) and, if lost, had been lost
// before. (Apart from Release, so that the compiler writes Release's few
// defers out inline; see docs/benchmarks.md.)
func (l *Lock) release(ctx context.Context, b budget, expires time.Time, lost bool) error {
	c := l.c
	if err := c.enter(); err != nil {
		return err
	}
	defer c.exit()
	// Sent even for a lost lock: our keys may still sit on servers whose
	// clocks run slow. The calls are owner-checked, so a new holder's keys
	// are safe.
	f := fan{op: opRelease, name: l.name, key: l.key, token: l.token, timeout: b.timeout, after: l.tails, prim: l.prim, final: true,
		rule: untilKnownReleased, delay: l.delay()}
	if l.o.minHold > 0 && !lost { // a clock read saved for most locks
		// The TTL is cut to the rest of the minimum hold, and never set
		// beyond the rest of the lock's own: a hold longer than the TTL
		// must not turn Release into an extension. The keys were set no
		// sooner than their call began, so expires is no later than
		// their end on the servers.
		now := c.clock.Now()
		if keep := earlier(l.acquired.Add(l.o.minHold), expires).Sub(now); keep >= keyserver.MinTTL {
			f.op, f.ttl = opExtend, keep
			if f.delay > 0 {
				f.delay = noDelay // a release: the cut leaves no delay
			}
		}
	}
	if ctx.Done() != nil {
		ctx = context.WithoutCancel(ctx)
	}
	res := c.fanOut(ctx, f)
	c.settle(ctx, &f, &res, false)
	t := res.tally
	c.logVotes(f.op, l.name, t)
	l.tails = res.tails()
	c.released.note(l.key, l.tails)
	switch {
	case lost:
		return holdErr(l.kind(), l.name, []error{ErrNotHeld, ErrLockLost}, "not held: it had been lost before it was released")
	case t.won():
		return nil
	case t.refused > t.n-quorum(t.n):
		// So many servers hold another token that no quorum can have
		// held ours: for an even n, fewer than a quorum of refusals.
		return newQuorumError("release", l.kind(), l.name, 1, t, nil, ErrNotHeld)
	}
	return newQuorumError("release", l.kind(), l.name, 1, t, nil) // the servers that failed may still hold the key
}

// releases remembers, per key, the calls of this client's last release of
// it that were still running when Release returned (at a quorum): the
// next acquisition of the key by this client sends its calls after them,
// server by server, so that a process that takes a lock again at once is
// not refused by a server its own release has not reached yet.
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

// take returns, once, the calls of the last release of key that are
// still running, or nil. They are another token's: the new token's calls
// follow them, but are made nowhere yet (see tails.made).
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
	for _, ch := range tails {
		if !closed(ch) {
			return false
		}
	}
	return true
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
