package redlock

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/goredlock/goredlock/keyserver"
)

// serverCall is one operation on one key server.
type serverCall func(ctx context.Context, ks keyserver.KeyServer) (bool, error)

// vote is one server's answer.
type vote struct {
	server int
	ok     bool
	err    error
}

// fanOut calls op on every server concurrently, each call bounded by
// timeout, and returns as soon as the outcome is decided: a quorum for, or so
// many against that a quorum is out of reach. Calls still running then
// finish in the background within their timeout; nothing waits for them.
//
// The caller must call settle exactly once with the final verdict (an
// acquire can win the vote and still fail on validity). When it says failed
// and undo is not nil, undo runs on every server after that server's own
// call has returned, so that a late "yes" is undone too and an undo never
// overtakes the call it undoes. settle waits for the undos of the servers
// that had answered; stragglers undo in the background.
//
// Every server failure is logged with opName and the lock's name when it
// happens, also after the outcome was decided.
func (c *Client) fanOut(ctx context.Context, timeout time.Duration, opName, lockName string, op, undo serverCall) (t tally, settle func(failed bool)) {
	n := len(c.servers)
	t.n = n
	if n == 1 {
		return c.fanOutOne(ctx, timeout, opName, lockName, op, undo)
	}
	callCtx, cancel := c.clock.WithTimeout(ctx, timeout)
	votes := make(chan vote, n)
	var (
		pending atomic.Int32
		failed  bool // written before decided is closed
		decided = make(chan struct{})
		undone  = make([]chan struct{}, n)
	)
	pending.Store(int32(n))
	c.bg.Add(n)
	for i, ks := range c.servers {
		undone[i] = make(chan struct{})
		go func(i int, ks keyserver.KeyServer) {
			defer c.bg.Done()
			defer close(undone[i])
			ok, err := op(callCtx, ks)
			if pending.Add(-1) == 0 {
				cancel()
			}
			if err != nil {
				c.logger.Warn("redlock: key server failed", "op", opName, "lock", lockName, "server", i, "error", err)
			}
			votes <- vote{server: i, ok: ok, err: err}
			if undo == nil {
				return
			}
			<-decided
			if failed {
				c.undo(ctx, timeout, lockName, i, ks, undo)
			}
		}(i, ks)
	}

	var answered []int
	for !t.decided() {
		v := <-votes
		answered = append(answered, v.server)
		t.add(v)
	}
	return t, func(f bool) {
		failed = f
		close(decided)
		if undo == nil || !f {
			return
		}
		for _, i := range answered {
			<-undone[i]
		}
	}
}

// fanOutOne is fanOut for a single server, whose answer decides anyway:
// the call is made on the caller's goroutine, which makes the single-node
// setups (one Redis, the in-memory server) several times cheaper.
func (c *Client) fanOutOne(ctx context.Context, timeout time.Duration, opName, lockName string, op, undo serverCall) (t tally, settle func(failed bool)) {
	t.n = 1
	ks := c.servers[0]
	callCtx, cancel := c.clock.WithTimeout(ctx, timeout)
	ok, err := op(callCtx, ks)
	cancel()
	if err != nil {
		c.logger.Warn("redlock: key server failed", "op", opName, "lock", lockName, "server", 0, "error", err)
	}
	t.add(vote{server: 0, ok: ok, err: err})
	return t, func(failed bool) {
		if failed && undo != nil {
			c.undo(ctx, timeout, lockName, 0, ks, undo)
		}
	}
}

// undo cleans up after a failed attempt on server i. It runs even when the
// caller's context has ended, as leaving the key behind would block
// everyone until its TTL ran out.
func (c *Client) undo(ctx context.Context, timeout time.Duration, lockName string, i int, ks keyserver.KeyServer, undo serverCall) {
	uctx, cancel := c.clock.WithTimeout(context.WithoutCancel(ctx), timeout)
	defer cancel()
	if _, err := undo(uctx, ks); err != nil {
		c.logger.Warn("redlock: key server failed", "op", "release after a failed attempt", "lock", lockName, "server", i, "error", err)
	}
}
