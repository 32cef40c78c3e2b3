package redlock

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/goredlock/goredlock/keyserver"
)

// primOps makes the server calls of a primitive's hold (a permit, a read
// or write hold, a leadership) in place of a lock key's Acquire, Extend
// and Release, so that the fan-out, the votes, Lock, KeepAlive and Do
// serve the primitives unchanged: an attempt's fan carries it, and so
// does the Lock it grants.
type primOps interface {
	// call makes f's call (f.op is opAcquire, opExtend, opRelease or
	// opRead) to server i, as fan.call does for a lock.
	call(ctx context.Context, f *fan, i int, ks keyserver.KeyServer) (ok bool, n uint64, h keyserver.Holder, err error)
}

// primitive is what the acquisition of a primitive's hold asks of the
// primitive.
type primitive interface {
	// ops returns the calls of the next attempt: a semaphore picks the
	// slot it asks for.
	ops() primOps
	// again reports, after a refused attempt whose calls were ops, whether
	// to try again at once rather than wait: a semaphore whose refusals
	// named a slot free on a quorum.
	again(ops primOps, t tally) bool
	// watch watches the primitive's key on server ks for the change the
	// call that token belongs to waits for.
	watch(ctx context.Context, ks keyserver.KeyServer, key, token string) (<-chan struct{}, func(), error)
	// together is how many calls could be granted together, which is
	// how many of a client's waiting calls try on the servers at once
	// (see gates); 0 for no bound.
	together() int
}

// maxAtOnce bounds the attempts a call makes in a row without waiting,
// when refusals keep naming a free slot that others take first.
const maxAtOnce = 3

// primAcquisition is one call that takes a primitive's hold, from its
// first attempt to its verdict.
type primAcquisition struct {
	c         *Client
	o         *options
	p         primitive
	name, key string
	ttl       time.Duration
	timeout   time.Duration
	margin    time.Duration
	retries   int  // -1: no limit
	fenced    bool // draw a fencing token (a leader's term) with each grant
	rank      rank
	token     string // the last attempt's: it names the call to the watches
	attempts  int
	last      tally
	patience  time.Time   // when a waiting call gives up; zero until its first refusal
	watches   []watchOf   // per server, once the call first waited
	undone    uint64      // bit(i): server i granted an attempt that was undone since the call last watched anew
	note      func(tally) // tells the calls waiting at the gate a refusal; nil without a gate
}

// watchOf is one server's watch of the primitive's key.
type watchOf struct {
	changed <-chan struct{}
	stop    func()
	at      time.Time // when it was set
}

// renewWatches is how often a waiter sets its watches anew: a server may
// forget a watch not set again within keyserver.LineTTL.
const renewWatches = keyserver.LineTTL / 3

// acquirePrim takes a hold of primitive p, called name and kept under key
// on the servers, for ttl: one attempt when m is once, else retrying as
// Acquire does, woken by the servers' watches of key.
func (c *Client) acquirePrim(ctx context.Context, o *options, name, key string, ttl time.Duration, m mode, fenced bool, p primitive) (l *Lock, err error) {
	a := &primAcquisition{c: c, o: o, p: p, name: name, key: key, ttl: ttl,
		timeout: o.timeoutFor(ttl), margin: o.marginFor(ttl), retries: o.retryCount, fenced: fenced || o.fencing}
	if m == once {
		a.retries = 0
	}
	began := c.clock.Now()
	a.rank = newRank(began)
	if c.hooks.Acquired != nil {
		defer func() {
			c.hooks.Acquired(ctx, Acquisition{Name: name, Attempts: a.attempts, Duration: c.clock.Since(began), Err: err})
		}()
	}
	defer a.stopWatches()
	if n := p.together(); n > 0 && m != once {
		var patience time.Duration
		if a.retries > 0 {
			patience = time.Duration(a.retries) * o.retryDelay
		}
		leave, note, last, err := c.enterGate(ctx, key, n, patience)
		if err != nil {
			if errors.Is(err, ErrClosed) {
				return nil, err
			}
			return nil, holdNotAcquired(kindOf(p), name, 0, last, ctx.Err())
		}
		defer leave()
		a.note = note
	}
	atOnce := 0
	for {
		if err := ctx.Err(); err != nil {
			return nil, a.notAcquired(err)
		}
		ops := p.ops()
		if l, err := a.attempt(ctx, ops); l != nil || err != nil {
			return l, err
		}
		if a.last.hopeless() {
			return nil, a.notAcquired(ctx.Err())
		}
		if atOnce < maxAtOnce && p.again(ops, a.last) {
			atOnce++
			continue
		}
		atOnce = 0
		if a.outOfPatience() {
			return nil, a.notAcquired(ctx.Err())
		}
		if a.watches == nil {
			// Watch, then look again: a release between the refusal and
			// the watch is not missed.
			a.armWatches(ctx)
			continue
		}
		a.ignoreOwnUndo(ctx)
		if err := a.backOff(ctx); err != nil {
			return nil, a.notAcquired(err)
		}
		if err := a.wait(ctx); err != nil {
			return nil, a.notAcquired(err)
		}
	}
}

// attempt is one round: the primitive's acquire on every server, granted
// on a quorum with validity beyond the loss margin (and, when fenced, a
// fencing token written to a quorum); otherwise undone on every server.
func (a *primAcquisition) attempt(ctx context.Context, ops primOps) (*Lock, error) {
	c, o := a.c, a.o
	if err := c.beginAttempt(); err != nil {
		return nil, err
	}
	defer c.exit()
	a.attempts++
	token, err := o.newToken(a.rank)
	if err != nil {
		return nil, fmt.Errorf("redlock: generating a token: %w", err)
	}
	a.token = token
	f := fan{op: opAcquire, name: a.name, key: a.key, token: token, ttl: a.ttl, timeout: a.timeout,
		rule: earliest, undo: true, prim: ops, quarantine: c.quarantineRule(o)}
	if !c.inProcess {
		// After this client's last release of the key, server by server,
		// as a lock's acquisition is: a server the release has not reached
		// yet would refuse a write hold or a permit of one for nothing.
		f.after = c.released.take(a.key)
	}
	start := c.clock.Now()
	res := c.fanOut(ctx, f)
	t := res.tally
	dup := c.identities.failed() // two servers found to be one store: no grant counts
	granted := dup == nil && t.won() && validity(a.ttl, c.clock.Since(start), o.driftFactor) > a.margin
	var fence uint64
	if granted && a.fenced {
		var ft tally
		if fence, ft = c.fence(ctx, o, a.name, a.key, a.ttl, t.maxN); fence == 0 {
			granted, t = false, ft
		}
		granted = granted && validity(a.ttl, c.clock.Since(start), o.driftFactor) > a.margin
	}
	c.settle(ctx, &f, &res, !granted)
	a.last = t
	if !granted {
		a.undone |= t.granters
		if a.note != nil {
			a.note(t)
		}
	}
	c.logVotes(opAcquire, a.name, t)
	if c.hooks.Attempt != nil {
		c.hooks.Attempt(ctx, Attempt{Name: a.name, Number: a.attempts, Servers: t.n, Granted: t.granted, Refused: t.refused,
			Failed: len(t.errs), Duration: c.clock.Since(start), OK: granted})
	}
	if dup != nil {
		return nil, dup
	}
	if !granted {
		if a.fenced && t.maxN >= keyserver.MaxFence {
			return nil, holdFenceErr(kindOf(a.p), a.name)
		}
		return nil, nil
	}
	return newLock(c, o, grant{name: a.name, key: a.key, token: token, ttl: a.ttl, start: start,
		tails: res.tails(), fence: fence, ctx: ctx, prim: ops}), nil
}

// outOfPatience reports, after a refused attempt, whether the call has
// waited as long as its retries allow: retries × the retry delay since
// its first refusal, however often it was woken meanwhile.
func (a *primAcquisition) outOfPatience() bool {
	if a.retries < 0 {
		return false
	}
	if a.retries == 0 {
		return true
	}
	now := a.c.clock.Now()
	if a.patience.IsZero() {
		a.patience = now.Add(time.Duration(a.retries) * a.o.retryDelay)
	}
	return !now.Before(a.patience)
}

// armWatches starts a watch of the key on every server that has none,
// whose watch fired, or whose watch is due to be set anew (renewWatches);
// a server whose watch fails is waited for by the retry delay.
func (a *primAcquisition) armWatches(ctx context.Context) {
	a.watch(ctx, true)
}

// watch starts a watch of the key on every server that has none, and,
// when renew is set, on those whose watch fired or is due to be set anew.
// A fired watch is renewed only after the wait it ended, never before it:
// that would swallow the change it announced.
func (a *primAcquisition) watch(ctx context.Context, renew bool) {
	c := a.c
	if a.watches == nil {
		a.watches = make([]watchOf, len(c.servers))
	}
	now := c.clock.Now()
	for i, ks := range c.servers {
		w := &a.watches[i]
		if w.changed != nil && (!renew || !closed(w.changed) && now.Sub(w.at) < renewWatches) {
			continue
		}
		if w.stop != nil {
			w.stop()
			*w = watchOf{}
		}
		if failed(a.last, i) {
			continue
		}
		wctx, cancel := c.clock.WithTimeout(ctx, a.timeout)
		changed, stop, err := a.p.watch(wctx, ks, a.key, a.token)
		cancel()
		if err == nil {
			*w = watchOf{changed: changed, stop: stop, at: now}
		}
	}
}

// ignoreOwnUndo watches anew on the servers that granted an attempt since
// the call last did, which was then undone, so that its own clean-up does
// not wake it ("How primitives wait" in docs/design.md).
func (a *primAcquisition) ignoreOwnUndo(ctx context.Context) {
	for i := range a.watches {
		w := &a.watches[i]
		if a.undone&bit(i) != 0 && w.stop != nil {
			w.stop()
			*w = watchOf{}
		}
	}
	a.undone = 0
	a.watch(ctx, false)
}

// backOff waits a moment drawn from (0, retry delay / 4] after an attempt
// that split the servers, so that contenders woken by each other's
// clean-up come back apart ("How primitives wait" in docs/design.md).
func (a *primAcquisition) backOff(ctx context.Context) error {
	if a.last.granted == 0 || a.last.won() {
		return nil
	}
	c := a.c
	d := time.Duration(rand.Int64N(int64(a.o.retryDelay/4)+1)) + 1
	return c.clock.SleepOrWake(ctx, d, []<-chan struct{}{c.closing.Done()})
}

// stopWatches ends every watch.
func (a *primAcquisition) stopWatches() {
	for i := range a.watches {
		if stop := a.watches[i].stop; stop != nil {
			stop()
		}
	}
}

// wait waits after a refused attempt until a server announces a change,
// the soonest holder's TTL runs out, the retry delay (with jitter) or
// renewWatches passes, or the call's patience ends; then it watches again
// where a watch fired or is due to be set anew.
func (a *primAcquisition) wait(ctx context.Context) error {
	c := a.c
	d := a.o.retryWait()
	if l := a.last.left; l > 0 && l < d {
		d = l
	}
	if mw, ok := a.p.(interface{ maxWait() time.Duration }); ok {
		d = min(d, mw.maxWait())
	}
	d = min(d, renewWatches)
	if a.retries > 0 {
		d = max(min(d, a.patience.Sub(c.clock.Now())), 0)
	}
	wake := []<-chan struct{}{c.closing.Done()}
	for _, w := range a.watches {
		if w.changed != nil {
			wake = append(wake, w.changed)
		}
	}
	if err := c.clock.SleepOrWake(ctx, d, wake); err != nil {
		return err
	}
	a.armWatches(ctx)
	return nil
}

// notAcquired is the call's error, with the votes of its last attempt.
func (a *primAcquisition) notAcquired(ctxErr error) *QuorumError {
	return holdNotAcquired(kindOf(a.p), a.name, a.attempts, a.last, ctxErr)
}

// checkServers refuses a primitive over servers that do not implement
// what it needs (is), before any server is asked.
func (c *Client) checkServers(what, iface string, is func(keyserver.KeyServer) bool) error {
	for i, s := range c.servers {
		if !is(s) {
			return invalidArgument("%s needs every key server to implement keyserver.%s; server %d (%T) does not", what, iface, i, s)
		}
	}
	return nil
}

// primOptions resolves the options of a call that takes a hold of kind k
// and checks its name and TTL, before any server is asked.
func (c *Client) primOptions(k kind, name string, ttl time.Duration, opts []Option) (*options, error) {
	o, err := c.options.with(opts)
	if err != nil {
		return nil, err
	}
	if err := checkHold(o, k, name, ttl); err != nil {
		return nil, err
	}
	return o, nil
}
