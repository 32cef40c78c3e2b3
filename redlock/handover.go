package redlock

import (
	"cmp"
	"context"
	"time"
)

// Hand-over inside a process: see "Hand-over inside a process" in
// docs/design.md.

// Defaults of WithHandOver and WithHandOverPasses.
const (
	DefaultHandOver       = 10 * time.Millisecond
	DefaultHandOverPasses = 64
)

// NoHandOver, given to WithHandOver, turns hand-over off: every grant comes
// from the servers, in the order their lines keep across processes.
const NoHandOver time.Duration = -1

// WithHandOver sets the budget of hand-over inside a process: for d after
// the servers granted a lock, Release passes it, without a server call, to
// the earliest other call of the same Client waiting for the same name in
// Acquire or Do. The passed lock is a grant like any other (Done, Err,
// KeepAlive, Release, Fence and the rest work on it); it keeps the
// servers' token and validity (Until is never later than the holder's),
// and with WithFencing its fence is raised on the servers above the
// holder's. The Acquired hook reports it with Attempts 0 when the call
// asked no server.
//
// Once d or WithHandOverPasses's count is spent, Release gives the lock
// back to the servers' line: a waiter of another process waits, beyond
// first come, first served, at most d and one hold more per chain of
// passes ahead of it. A lock is passed only with more than a third of its
// TTL, and more than its loss margin plus one server timeout, of validity
// left; to a call that asked for the same TTL and timings; never when held
// WithMinHold ("Hand-over inside a process" in docs/design.md).
//
// Given to a call, it says whether that call's lock may be passed on and
// whether the call takes a pass. Default (or 0): 10 ms; NoHandOver (any
// d < 0) turns it off.
func WithHandOver(d time.Duration) Option {
	return func(o *options) { o.handOver = max(d, NoHandOver) }
}

// WithHandOverPasses caps how many times a lock passes within its client
// before going back to the servers (see WithHandOver). Default (or 0): 64.
func WithHandOverPasses(n int) Option {
	return func(o *options) { o.handOverPasses = o.count("hand-over passes", n, 0) }
}

// handOverWithin is the time budget of a chain of passes; negative: off.
func (o *options) handOverWithin() time.Duration {
	return cmp.Or(o.handOver, DefaultHandOver)
}

// maxPasses is how many passes a chain may make.
func (o *options) maxPasses() int {
	return cmp.Or(o.handOverPasses, DefaultHandOverPasses)
}

// chain is how far a lock has been passed since the servers granted it.
type chain struct {
	began  time.Time // start of the attempt the servers granted
	passes int
}

// pass is a lock on its way from a holder, whose Lock is already released,
// to a waiting call of the same client: what the servers hold, unchanged.
type pass struct {
	o       *options // the holder's
	token   string
	fence   uint64
	b       budget    // of the last grant or extension on the servers
	granted time.Time // its start
	until   time.Time // the end of the quorum's validity
	tails   tails     // the lock's last calls, per server
	chain   chain
}

// taker is what a waiting call needs of a pass: its options and budget.
type taker struct {
	o *options
	b budget
}

// fits reports whether t may take p: p's lock is what its own grant would
// be (TTL, timings, drift, lock-delay, quarantine). A call has a taker only
// if it takes passes (takesPasses).
func (t *taker) fits(p *pass) bool {
	o, h := t.o, p.o
	return t.b == p.b && (o == h ||
		o.driftFactor == h.driftFactor && o.lockDelay == h.lockDelay && o.quarantine == h.quarantine)
}

// passFloor is the validity a lock of b must have left to be passed (the
// validity floor of "Hand-over inside a process" in docs/design.md).
func (b budget) passFloor() time.Duration { return max(b.ttl/3, b.margin+b.timeout) }

// mayGo reports whether p may be passed at now: within budget, above floor.
func (p *pass) mayGo(now time.Time) bool {
	o := p.o
	return p.chain.passes < o.maxPasses() && now.Sub(p.chain.began) < o.handOverWithin() &&
		p.until.Sub(now) > p.b.passFloor()
}

// passing returns the pass of l, being released and not lost, if it may go
// to a waiting call, else nil. l.mu must be held, before l.end.
func (l *Lock) passing() *pass {
	o, c := l.o, l.c
	if !l.kind.traits().passes || o.handOver < 0 || o.minHold > 0 || l.risk != nil && l.risk.entered {
		return nil
	}
	if _, ok := c.queues.Load(l.key); !ok {
		return nil // nobody of this client waits: the common case
	}
	p := &pass{o: o, token: l.token, fence: l.fence, b: l.b, granted: l.granted, until: l.until, tails: l.tails, chain: l.chain}
	if !p.mayGo(c.clock.Now()) {
		return nil
	}
	return p
}

// handTo gives p to the first call of key's queue, if that call takes it
// (not mid-attempt, and p fits it), and wakes it; it reports whether it
// did. The queue's hold stays with p's token while p is on its way.
func (c *Client) handTo(key string, p *pass) bool {
	if c.closing.Err() != nil {
		return false
	}
	v, ok := c.queues.Load(key)
	if !ok {
		return false
	}
	q := v.(*queue)
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.gone || len(q.calls) == 0 {
		return false
	}
	w := q.calls[0]
	if w.trying || w.pass != nil || w.taker == nil || !w.taker.fits(p) {
		return false // it gets the lock from the servers, in rank order
	}
	w.pass = p
	w.signal()
	return true
}

// hold records that a call of q holds the lock token and may pass it on
// until until (its chain's budget or its loss), while the front waits for
// it in the process and the queue stays. An empty token passes nothing.
func (q *queue) hold(token string, until time.Time) {
	q.mu.Lock()
	q.holder, q.holdUntil = token, until
	q.mu.Unlock()
}

// unhold records that the lock token went back to the servers, and wakes
// the call at the front of key's queue to ask them.
func (c *Client) unhold(key, token string) {
	v, ok := c.queues.Load(key)
	if !ok {
		return
	}
	q := v.(*queue)
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.holder != token {
		return
	}
	q.holder, q.holdUntil = "", time.Time{}
	if len(q.calls) > 0 {
		q.calls[0].signal()
	} else if !q.gone {
		q.gone = true
		c.queues.CompareAndDelete(q.key, q)
	}
}

// holds records, as a call that was granted l leaves its queue, whether
// the calls of the queue may wait for l to be passed on.
func (a *acquisition) holds(l *Lock) {
	if a.queue == nil {
		return
	}
	o := l.o
	if !l.kind.traits().passes || o.handOver < 0 || o.minHold > 0 || l.chain.passes >= o.maxPasses() {
		a.queue.hold("", time.Time{})
		return
	}
	l.mu.Lock()
	until := earlier(l.lossAt, l.chain.began.Add(o.handOverWithin()))
	l.mu.Unlock()
	a.queue.hold(l.token, until)
}

// giveBack disposes of p, which the call it was passed to does not take:
// to the next call waiting, when again and p may still go, or else back to
// the servers, whose line serves the next waiter.
func (c *Client) giveBack(ctx context.Context, name, key string, p *pass, again bool) {
	if again && p.mayGo(c.clock.Now()) && c.handTo(key, p) {
		return
	}
	l := &Lock{c: c, o: p.o, name: name, key: key, token: p.token, tails: p.tails, kind: lockOps{}}
	_ = l.release(context.WithoutCancel(ctx), p.b, p.granted.Add(p.b.ttl), false) // as Release's: final either way
	c.unhold(key, p.token)
}

// takesPasses records that the call, a lock's in its client's queue, may
// be passed a lock, unless its options turn hand-over off.
func (a *acquisition) takesPasses() {
	if a.qw != nil && a.kind.traits().passes && a.o.handOver >= 0 {
		t := &taker{o: a.o, b: a.b}
		a.queue.mu.Lock()
		a.qw.taker = t
		a.queue.mu.Unlock()
	}
}

// passable reports whether a lock may be passed to the waiting call.
func (a *acquisition) passable() bool {
	return a.qw != nil && a.qw.taker != nil
}

// takePass, before each attempt, takes the lock passed to the call, if
// any; else the call is marked trying, and is passed nothing until refused.
func (a *acquisition) takePass(ctx context.Context) (*Lock, error) {
	if !a.passable() {
		return nil, nil
	}
	p := a.queue.ask(a.qw)
	if p == nil {
		return nil, nil
	}
	c := a.c
	switch {
	case c.closing.Err() != nil:
		c.giveBack(ctx, a.name, a.key, p, false)
		return nil, ErrClosed
	case ctx.Err() != nil:
		c.giveBack(ctx, a.name, a.key, p, true)
		return nil, a.notAcquired(ctx.Err())
	}
	fence := p.fence
	if a.fenced {
		// Strictly above the previous holder's, on a quorum, before the
		// lock is handed out ("Fencing across a quorum" in docs/design.md).
		if err := c.beginAttempt(); err != nil {
			c.giveBack(ctx, a.name, a.key, p, false)
			return nil, err
		}
		// Worth another round while the pass keeps its validity floor.
		worth := func() bool { return p.until.Sub(c.clock.Now()) > p.b.passFloor() }
		fence, _ = c.fence(ctx, a.name, a.key, p.b.timeout, p.fence, worth)
		c.exit()
	}
	now := c.clock.Now()
	// Not raised, or it waited too long to be woken: it asks the servers.
	if a.fenced && fence == 0 || p.until.Sub(now) <= p.b.passFloor() {
		c.giveBack(ctx, a.name, a.key, p, false)
		return nil, nil
	}
	a.passed = true
	return newLock(c, a.o, grant{name: a.name, key: a.key, token: p.token, b: p.b, began: now, from: p.granted, tails: p.tails,
		fence: fence, ctx: ctx, kind: a.kind, chain: chain{began: p.chain.began, passes: p.chain.passes + 1}}), nil
}
