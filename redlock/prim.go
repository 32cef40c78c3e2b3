package redlock

import (
	"context"
	"math/rand/v2"
	"sync"
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

// watch is what a waiting call watches on one server: its turn in the
// server's line (a lock; a set, in the line of each key not yet promised
// to it), or a change of the key (a primitive).
type watch struct {
	changed []<-chan struct{} // nil when none is armed
	stop    func()
	at      time.Time // when it was set
	anew    bool      // to be set anew at the next watch (see ignoreOwnUndo)
}

// armed reports whether w watches anything.
func (w *watch) armed() bool { return w.changed != nil }

// fired reports whether one of w's channels is closed: a turn came, or the
// watch broke.
func (w *watch) fired() bool {
	for _, ch := range w.changed {
		if closed(ch) {
			return true
		}
	}
	return false
}

// renewWatches is how often a waiter sets its watches anew: a server may
// forget a watch not set again within keyserver.LineTTL.
const renewWatches = keyserver.LineTTL / 3

// acquirePrim takes a hold of primitive p, called name and kept under key
// on the servers, for ttl: one attempt when m is once, else retrying as
// Acquire does, woken by the servers' watches of key.
func (c *Client) acquirePrim(ctx context.Context, o *options, name, key string, ttl time.Duration, m mode, fenced bool, p primitive) (*Lock, error) {
	return c.acquireHold(ctx, o, name, key, ttl, m, fenced || o.fencing, p)
}

// armWatches starts a watch of the key on every server that has none,
// whose watch fired, or whose watch is due to be set anew (renewWatches);
// a server whose watch fails is waited for by the retry delay.
func (a *acquisition) armWatches(ctx context.Context) {
	a.watch(ctx, true)
}

// watch starts a watch of the key on every server that has none or
// whose watch is to be set anew (anew), and, when renew is set, on those
// whose watch fired or is due to be set anew. A fired watch is renewed
// only after the wait it ended, never before it: that would swallow the
// change it announced. A watch is set anew before the one it replaces is
// stopped, so that the call stays among the server's watchers (the last
// stop of a call's watches takes it out).
func (a *acquisition) watch(ctx context.Context, renew bool) {
	c := a.c
	if a.watches == nil {
		a.watches = make([]watch, len(c.servers))
	}
	now := c.clock.Now()
	var (
		wg  sync.WaitGroup
		old []func()
	)
	// The goroutines take copies, not a: a captured a would move every
	// acquisition, a lock's too, to the heap.
	p, key, token, timeout := a.p, a.key, a.token, a.b.timeout
	for i, ks := range c.servers {
		w := &a.watches[i]
		if w.armed() && !w.anew && (!renew || !w.fired() && now.Sub(w.at) < renewWatches) {
			continue
		}
		if w.stop != nil {
			old = append(old, w.stop)
		}
		*w = watch{}
		if failed(a.last, i) {
			continue
		}
		// Every server at once: a release that finds the call watching on
		// some servers and not yet on others would tell another waiter
		// there, and split the servers' promises.
		wg.Add(1)
		go func() {
			defer wg.Done()
			wctx, cancel := c.clock.WithTimeout(ctx, timeout)
			changed, stop, err := p.watch(wctx, ks, key, token)
			cancel()
			if err == nil {
				*w = watch{changed: []<-chan struct{}{changed}, stop: stop, at: now}
			}
		}()
	}
	wg.Wait()
	for _, stop := range old {
		stop()
	}
}

// ignoreOwnUndo watches anew on the servers that granted an attempt since
// the call last did, which was then undone, so that its own clean-up does
// not wake it ("How primitives wait" in docs/design.md).
func (a *acquisition) ignoreOwnUndo(ctx context.Context) {
	for i := range a.watches {
		if a.undone&bit(i) != 0 && a.watches[i].stop != nil {
			a.watches[i].anew = true
		}
	}
	a.undone = 0
	a.watch(ctx, false)
}

// backOff waits a moment drawn from (0, retry delay / 4] after an attempt
// that split the servers, so that contenders woken by each other's
// clean-up come back apart ("How primitives wait" in docs/design.md).
func (a *acquisition) backOff(ctx context.Context) error {
	if a.last.granted == 0 || a.last.won() {
		return nil
	}
	c := a.c
	d := time.Duration(rand.Int64N(int64(a.o.retryDelay/4)+1)) + 1
	return c.clock.SleepOrWake(ctx, d, []<-chan struct{}{c.closing.Done()})
}

// stopWatches ends every watch. A primitive's call whose last attempt
// won the servers records it in its queue first (see heldSince).
func (a *acquisition) stopWatches() {
	if a.p != nil && a.queue != nil && a.last.won() {
		a.queue.won(a.qw)
	}
	for i := range a.watches {
		if stop := a.watches[i].stop; stop != nil {
			stop()
		}
		a.watches[i] = watch{}
	}
}

// prewatches reports whether the call watches the servers while it is
// next behind the front of its queue, before its first attempt: a
// waiting primitive's call of which its client lets one at a time try (a
// writer, a permit of a semaphore of one). Its place among the watchers
// then dates from then. A release that finds it the earliest watcher
// tells it, and it tries, at the front or not (as a lock's call put in
// the servers' lines by the call ahead does). Reaching the front untold,
// it looks first, unless the call ahead won the servers with an attempt
// begun after it watched (queue.heldSince): that hold stood on a quorum
// after its watches did, so its end there tells the earliest watcher,
// this call or one ahead of it, whose own hold's end tells the next in
// turn; a look would only be refused. (A semaphore of more permits may
// have a free slot that no release will announce; it looks.)
func (a *acquisition) prewatches() bool {
	if a.p == nil || a.mode != waits || a.retries == 0 || a.p.together() != 1 {
		return false
	}
	_, set := a.p.(*setOps)
	return !set
}

// prewatch arms the watches of a call next behind the front of queue q
// (w), or renews those due, with a token of its rank until it draws its
// own. It reports whether one fired (told), and else how soon the next is
// due to be set anew.
func (a *acquisition) prewatch(ctx context.Context, q *queue, w *queued) (told bool, renewIn time.Duration) {
	if a.watches == nil {
		if a.token == "" {
			a.token = a.rank.token()
		}
		a.watch(ctx, false)
		q.watching(w)
	}
	for {
		now := a.c.clock.Now()
		renewIn = renewWatches
		for _, pw := range a.watches {
			if pw.fired() {
				return true, 0
			}
			if pw.armed() {
				renewIn = min(renewIn, renewWatches-now.Sub(pw.at))
			}
		}
		if renewIn > 0 {
			return false, renewIn
		}
		a.watch(ctx, true) // none fired: only those due
	}
}

// heldSinceWatched reports whether the call, at the front of its queue
// before its first attempt, may wait for its watches rather than look
// first (see prewatches): none fired, a quorum stands, and the call ahead
// won the servers since they did.
func (a *acquisition) heldSinceWatched() bool {
	if !a.prewatches() || a.watches == nil || !a.queue.heldSince(a.qw) {
		return false
	}
	armed := 0
	for _, pw := range a.watches {
		if pw.fired() {
			return false
		}
		if pw.armed() {
			armed++
		}
	}
	return armed >= a.c.quorum
}

// waitForChange waits after a primitive's refused attempt until a server
// announces a change, the soonest holder's TTL runs out, the retry delay
// (with jitter) or renewWatches passes, or the call's patience ends. A
// watch that fired is set anew here, after the attempt its change led to
// (a waiter told of its turn tries at once, as a lock's does), and the
// call then looks again rather than wait: the server may have told
// another waiter in between, when this one was no watcher there.
func (a *acquisition) waitForChange(ctx context.Context) error {
	if a.watches == nil {
		// Watch, then look again: a release between the refusal and the
		// watch is not missed.
		a.armWatches(ctx)
		return nil
	}
	a.ignoreOwnUndo(ctx)
	if err := a.backOff(ctx); err != nil {
		return err
	}
	fired := false
	for _, w := range a.watches {
		fired = fired || w.fired()
	}
	a.armWatches(ctx)
	if fired {
		return nil
	}
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
	// Told by some servers, it gathers the others' word (see awaitTurns).
	need := 0
	for _, w := range a.watches {
		if w.armed() {
			need++
		}
	}
	return a.awaitTurns(ctx, max(min(need, c.quorum), 1), c.clock.Now().Add(d))
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

// isKeeper reports whether ks keeps the primitives' holds.
func isKeeper(ks keyserver.KeyServer) bool {
	_, ok := ks.(keyserver.HoldKeeper)
	return ok
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
