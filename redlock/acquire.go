package redlock

import (
	"context"
	"fmt"
	"time"

	"github.com/goredlock/goredlock/keyserver"
)

// mode is how a call that takes a lock treats a refusal.
type mode uint8

const (
	// waits: Acquire and Do wait while their patience lasts.
	waits mode = iota
	// once: TryAcquire makes one attempt.
	once
	// skips: DoOrSkip retries split votes and failures, and ends at once
	// when the lock is held elsewhere (see tally.skip).
	skips
)

// acquisition is one call that takes a hold of any kind, whose attempts
// share a rank ("Tokens and ranks" in docs/design.md).
type acquisition struct {
	c         *Client
	o         *options
	kind      holdKind // what it takes, with the calls of its last attempt (see holdKind.attempt)
	mode      mode
	name, key string
	b         budget // the TTL, and what the call derives from it once
	retries   int    // -1: no limit
	fenced    bool   // draw a fencing token with each grant
	rank      rank
	began     time.Time
	attempts  int
	atOnce    int   // attempts in a row without waiting (see acquireHold)
	last      tally // the votes of the last attempt
	token     string
	tails     tails       // the last attempt's calls
	calls     *background // and their answers; nil when they were made on the caller's goroutine
	kept      bool
	// patience is when the call gives up (outOfPatience), zero until its
	// first refusal; ahead, the waiters before it when it was last set.
	patience time.Time
	ahead    int
	// left is the holder's TTL left as the last refusal reported it, at
	// refusedAt: the next refusal tells by it whether the key was set anew.
	left      time.Duration
	refusedAt time.Time
	// inLine has bit i set while the call may have a place in server i's
	// line, which it leaves when it ends.
	inLine uint64
	// watches are, per server, the waiting call's watches; nil until it
	// first waits.
	watches watches
	undone  uint64 // bit(i): server i granted an attempt that was undone since the call last watched anew
	// queue and the call's place there, when it has one.
	queue *queue
	qw    *queued
	// passed is set once a lock of its client was passed to the call.
	passed bool
}

// acquireHold takes a hold of kind k called name and kept under key on
// the servers, for ttl, treating refusals as m says; fenced (or the option
// WithFencing) draws a fencing token with each grant.
func (c *Client) acquireHold(ctx context.Context, o *options, name, key string, ttl time.Duration, m mode, fenced bool, k holdKind) (l *Lock, err error) {
	a := &acquisition{c: c, o: o, kind: k, mode: m, name: name, key: key, b: o.budget(ttl), fenced: fenced || o.fencing,
		retries: o.retryCount, began: c.clock.Now()}
	if m == once {
		a.retries = 0
	}
	a.rank = newRank(a.began)
	if c.hooks.Acquired != nil {
		defer func() {
			c.hooks.Acquired(ctx, Acquisition{Name: name, Attempts: a.attempts, Duration: c.clock.Since(a.began), Err: err})
		}()
	}
	defer func() { a.end(ctx, l) }()
	switch {
	case k.traits().oneLine && a.waitsInLine(): // its queue is made once the servers put a call in line
		a.queue, a.qw = c.joinQueue(key, k.together(), &a.rank, true, false)
		a.takesPasses()
	case !k.traits().oneLine && m != once && k.together() > 0:
		a.queue, a.qw = c.joinQueue(key, k.together(), &a.rank, true, true)
	}
	for {
		if err := ctx.Err(); err != nil {
			return nil, a.notAcquired(err)
		}
		if err := a.awaitPlace(ctx); err != nil {
			return nil, err
		}
		if l, err := a.takePass(ctx); l != nil || err != nil {
			return l, err
		}
		if a.queue != nil && !k.traits().oneLine {
			a.queue.stamp(&a.qw.tried) // see heldSince
		}
		if l, err := a.attempt(ctx); l != nil || err != nil {
			return l, err
		}
		// Refused: again at once where holdKind.again says so, up to
		// maxAtOnce times in a row.
		if !a.last.hopeless() && a.atOnce < maxAtOnce && a.kind.again(a.last) {
			a.atOnce++
			continue
		}
		a.atOnce = 0
		if err := a.refused(ctx); err != nil {
			return nil, err
		}
		a.queueUp()
		if err := a.wait(ctx); err != nil {
			return nil, a.notAcquired(err)
		}
	}
}

// waitsInLine reports whether the call waits in the servers' lines when
// refused: Acquire, Do, AcquireAll and DoAll with retries ("Who waits in
// line" in docs/design.md). A fenced one draws its fence once held ("How a
// token is drawn" in docs/design.md).
func (a *acquisition) waitsInLine() bool {
	return a.mode == waits && a.retries != 0 && a.kind.traits().turns
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func earlier(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// attempt is one round of the algorithm ("Quorum and validity" in
// docs/design.md): the hold, or nil with the token released where it may
// be stored, unless the refusals say the others will give way (tally.keep).
func (a *acquisition) attempt(ctx context.Context) (*Lock, error) {
	c, o := a.c, a.o
	if err := c.beginAttempt(); err != nil {
		return nil, err
	}
	defer c.exit()
	a.attempts++
	f := a.fan()
	defer a.kind.attempted()
	// An earlier start only understates validity ("The first clock
	// reading" in docs/design.md).
	start := a.began
	if a.attempts > 1 || a.queue != nil || !c.inProcess {
		start = c.clock.Now()
	}
	res := c.fanOut(ctx, f)
	t := res.tally
	elapsed := c.clock.Since(start)
	dup := c.identities.failed() // two servers found to be one store: no grant counts
	granted := dup == nil && t.won() && validity(a.b.ttl, elapsed, o.driftFactor) > a.b.margin
	var fences []uint64
	if granted && a.fenced {
		// The tokens are drawn while the keys are held, before the
		// verdict: a failure undoes the grant like any other.
		var ft tally
		if fences, ft = a.drawFences(ctx, t.maxN, start); fences == nil {
			granted, t = false, ft
		}
		elapsed = c.clock.Since(start)
		granted = granted && validity(a.b.ttl, elapsed, o.driftFactor) > a.b.margin
	}
	kept := !granted && a.kind.traits().keepsToken && !a.finalAttempt() && !t.won() && t.keep()
	c.settle(ctx, &f, &res, !granted && !kept)
	a.record(ctx, &f, &res, t, granted, kept, elapsed)
	switch {
	case dup != nil:
		return nil, dup
	case !granted && a.fenced && t.maxN >= keyserver.MaxFence:
		return nil, fmt.Errorf("%s%s: fence counter reached its maximum %d", prefix, a.kind.name().of(a.name), uint64(keyserver.MaxFence))
	case !granted:
		return nil, nil
	}
	g := grant{name: a.name, key: a.key, token: a.token, b: a.b, began: start, tails: res.tails, ctx: ctx, kind: a.kind,
		chain: chain{began: start.Add(elapsed)}} // a chain of passes begins (handover.go)
	if len(fences) > 0 {
		g.fence = fences[0]
	}
	return newLock(c, o, g), nil
}

// fan is the next attempt's call to every server: with the token the call
// keeps, or a fresh one.
func (a *acquisition) fan() fan {
	c := a.c
	if !a.kept { // a fresh token: no earlier call of it to wait for
		a.token, a.tails = a.o.newToken(a.rank), tails{}
		if !c.inProcess {
			// After this client's last release of the key: a server it has
			// not reached yet would refuse for nothing.
			a.tails = c.released.take(a.key)
		}
	}
	a.kind = a.kind.attempt() // a semaphore asks for the slot it picked
	f := fan{op: opAcquire, name: a.name, key: a.key, token: a.token, ttl: a.o.keyTTL(a.b.ttl, a.kind.traits().delays), timeout: a.b.timeout,
		rule: earliest, undo: true, after: a.tails, quarantine: c.quarantineRule(a.o), kind: a.kind}
	switch {
	case a.waitsInLine() || a.mode == skips && a.attempts > 1 && a.kind.traits().oneLine:
		// DoOrSkip's retries too: the earliest of a split keeps its grants,
		// and waiters give way to it by the line (ReleaseInLine), which
		// promises the key to the earliest call in it ("Split votes" in
		// docs/design.md).
		f.op = opAcquireInLine
		// Not with hand-over: the call behind waits for a pass ("Hand-over
		// inside a process" in docs/design.md).
		if a.kind.traits().oneLine && a.queue != nil && !a.passable() {
			if r, ok := a.queue.next(a.qw); ok {
				f.next = r.token()
			}
		}
	case a.fenced && a.kind.traits().fencesInCall:
		f.op = opAcquireFenced
	}
	if a.mode == skips && !a.fenced {
		f.rule = untilKnownHeld
	}
	return f
}

// record keeps what the next attempt and the call's end need of a settled
// attempt, and reports it to the logs and hooks.
func (a *acquisition) record(ctx context.Context, f *fan, res *fanned, t tally, granted, kept bool, elapsed time.Duration) {
	c := a.c
	a.tails, a.kept, a.last = res.tails, kept, t
	a.calls = res.bg
	if f.op == opAcquireInLine {
		// In line where a Notifier was called (tails.made) and did not
		// grant. Where one granted, the give-back keeps a place only if
		// others wait, and the watch there tells it of a promise.
		a.inLine = c.notifierMask &^ t.granters & res.made
	}
	if !granted {
		a.undone |= t.granters
	}
	c.logVotes(opAcquire, a.name, t)
	if c.hooks.Attempt != nil {
		c.hooks.Attempt(ctx, Attempt{Name: a.name, Number: a.attempts, Servers: t.n, Granted: t.granted, Refused: t.refused,
			Failed: len(t.errs), Duration: elapsed, OK: granted, Ahead: t.ahead})
	}
	if !granted && t.won() && c.identities.failed() == nil {
		c.logger.Warn("redlock: quorum came too late to leave validity beyond the loss margin",
			"lock", a.name, "validity", validity(a.b.ttl, elapsed, a.o.driftFactor), "loss_margin", a.b.margin)
	}
}

// finalAttempt reports whether the attempt about to be settled is the
// call's last: no retry would follow a refusal.
func (a *acquisition) finalAttempt() bool {
	return a.retries == 0 || (a.retries > 0 && !a.patience.IsZero() && !a.c.clock.Now().Before(a.patience))
}

// end cleans up after the call, granted (l) or not: it records a
// primitive's win first (see heldSince), gives back what the last attempt
// kept, stops its watches, and leaves its lines in the background.
func (a *acquisition) end(ctx context.Context, l *Lock) {
	if !a.kind.traits().oneLine && a.queue != nil && a.last.won() {
		a.queue.heldBy(a.qw)
	}
	a.watches.stop()
	putInLine := false
	if a.queue != nil {
		if l != nil {
			a.holds(l) // before it leaves: the next call waits for a pass
		}
		if (l == nil || a.passed) && a.kind.traits().oneLine && a.queue.inLine(a.qw) {
			a.inLine, putInLine = a.c.notifierMask, true // put in line by the call ahead
			if a.token == "" {
				a.token = a.rank.token()
			}
		}
		if p := a.c.leaveQueue(a.queue, a.qw); p != nil { // passed as it gave up
			a.c.giveBack(ctx, a.name, a.key, p, true)
		}
	}
	// A give-back may have kept its places: it leaves every line it called
	// (a call passed the lock had failed its last attempt too).
	var unlessGranted *background
	if gaveBack := (l == nil || a.passed) && !a.kept && a.calls != nil && a.calls.f.givesBack(); gaveBack {
		a.inLine |= a.c.notifierMask & a.last.granters
	} else {
		unlessGranted = a.calls
		if a.inLine != 0 && !putInLine && a.calls != nil && a.calls.f.op == opAcquireInLine {
			// Servers that answered late mostly granted, or are still on
			// the SET NX, which puts no call in line.
			a.inLine = a.calls.mayJoinLine(a.inLine)
		}
	}
	if (l == nil || a.passed) && a.kept {
		a.c.background(ctx, fan{op: opRelease, name: a.name, key: a.key, token: a.token, timeout: a.b.timeout, after: a.tails, kind: a.kind})
	}
	if a.inLine != 0 {
		// After the last attempt's calls, which would put it back in
		// line; not where such a straggler granted.
		a.c.background(ctx, fan{op: opLeaveLine, name: a.name, key: a.key, token: a.token, timeout: a.b.timeout,
			after: a.tails, only: a.inLine, unlessGranted: unlessGranted, kind: a.kind})
	}
}
