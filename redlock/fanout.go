package redlock

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/goredlock/goredlock/keyserver"
)

// serverCall is one operation on one key server: its vote, and a number
// it read (a fence counter) or 0.
type serverCall func(ctx context.Context, ks keyserver.KeyServer) (ok bool, n uint64, err error)

// vote is one server's answer.
type vote struct {
	server int
	ok     bool
	n      uint64
	err    error
}

// fan is one operation to send to every server.
type fan struct {
	op      string        // "acquire", "extend", "release", for logs and errors
	name    string        // the lock's name, for logs
	timeout time.Duration // bound on each server's call
	rule    rule          // when the votes settle the outcome
	call    serverCall
	// undo, if set, runs on every server after that server's call when the
	// caller settles the fan-out as failed: a late "yes" is undone too, and
	// an undo never overtakes the call it undoes.
	undo serverCall
	// after, if set, holds per server a channel closed once the earlier
	// calls of the same lock to that server have finished; this call is
	// sent only then, so that it lands after them.
	after []<-chan struct{}
}

// closedChan is a done channel with nothing to wait for.
var closedChan = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// fanOut sends f.call to every server concurrently and returns as soon as
// the votes settle the outcome under f.rule. Calls still running then
// finish in the background within their timeout, counted by the client's
// background group so that Close waits for them.
//
// done holds per server a channel that is closed once that server's call,
// and its undo if any, have finished: the "after" of the lock's next call.
// The caller must call settle exactly once with the final verdict (an
// acquire can win the vote and still fail on validity). settle(true) undoes
// the servers' calls as f.undo says, and waits for the undos of the servers
// that granted before the verdict, which answer fast; the others are
// undone in the background.
//
// Every server failure is logged with the operation and the lock's name
// when it happens, also after the outcome was decided.
func (c *Client) fanOut(ctx context.Context, f *fan) (t tally, done []<-chan struct{}, settle func(failed bool)) {
	n := len(c.servers)
	t.n = n
	if n == 1 {
		return c.fanOutOne(ctx, f)
	}
	callCtx, cancel := c.clock.WithTimeout(ctx, f.timeout)
	votes := make(chan vote, n)
	var (
		pending atomic.Int32
		failed  bool // written before decided is closed
		decided = make(chan struct{})
		chans   = make([]chan struct{}, n)
	)
	done = make([]<-chan struct{}, n)
	pending.Store(int32(n))
	c.bg.Add(n)
	for i, ks := range c.servers {
		chans[i] = make(chan struct{})
		done[i] = chans[i]
		go func(i int, ks keyserver.KeyServer) {
			defer c.bg.Done()
			defer close(chans[i])
			ok, n, err := c.callAfter(ctx, callCtx, f, i, ks)
			if pending.Add(-1) == 0 {
				cancel()
			}
			c.observe(ctx, f.op, f.name, i, err)
			votes <- vote{server: i, ok: ok, n: n, err: err}
			if f.undo == nil {
				return
			}
			<-decided
			if failed {
				c.undo(ctx, f, i, ks)
			}
		}(i, ks)
	}

	var granted []int
	for !t.decided(f.rule) {
		v := <-votes
		if v.ok {
			granted = append(granted, v.server)
		}
		t.add(v)
	}
	return t, done, func(fail bool) {
		failed = fail
		close(decided)
		if f.undo == nil || !fail {
			return
		}
		for _, i := range granted {
			<-chans[i]
		}
	}
}

// callAfter makes server i's call once the calls it must follow have
// finished. A call that had to wait gets a timeout of its own, as the
// shared one started with the fan-out.
func (c *Client) callAfter(ctx, callCtx context.Context, f *fan, i int, ks keyserver.KeyServer) (bool, uint64, error) {
	if f.after != nil {
		select {
		case <-f.after[i]:
		default:
			<-f.after[i]
			own, cancel := c.clock.WithTimeout(ctx, f.timeout)
			defer cancel()
			callCtx = own
		}
	}
	return f.call(callCtx, ks)
}

// fanOutOne is fanOut for a single server, whose answer decides anyway:
// the call is made on the caller's goroutine, which makes the single-node
// setups (one Redis, the in-memory server) several times cheaper. Calls of
// one lock on a single server are sequential already, so there is no
// earlier call to wait for.
func (c *Client) fanOutOne(ctx context.Context, f *fan) (t tally, done []<-chan struct{}, settle func(failed bool)) {
	t.n = 1
	ks := c.servers[0]
	callCtx, cancel := c.clock.WithTimeout(ctx, f.timeout)
	ok, n, err := f.call(callCtx, ks)
	cancel()
	c.observe(ctx, f.op, f.name, 0, err)
	t.add(vote{server: 0, ok: ok, n: n, err: err})
	return t, []<-chan struct{}{closedChan}, func(failed bool) {
		if failed && f.undo != nil {
			c.undo(ctx, f, 0, ks)
		}
	}
}

// undo cleans up after a failed attempt on server i. It runs even when the
// caller's context has ended, as leaving the key behind would block
// everyone until its TTL ran out.
func (c *Client) undo(ctx context.Context, f *fan, i int, ks keyserver.KeyServer) {
	uctx, cancel := c.clock.WithTimeout(context.WithoutCancel(ctx), f.timeout)
	defer cancel()
	_, _, err := f.undo(uctx, ks)
	c.observe(ctx, "release", f.name, i, err) // the clean-up of a failed attempt
}
