package redlock

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/goredlock/goredlock/keyserver"
)

// background is the state a fan-out shares with its calls still running.
// It is one allocation for the fan-out, with its per-server state in one
// more: under load these were most of the client's allocations.
type background struct {
	f       fan
	ctx     context.Context // the caller's
	callCtx context.Context // bounded by f.timeout from the fan-out's start
	cancel  context.CancelFunc
	pending atomic.Int32 // calls still running; the last one cancels callCtx

	mu sync.Mutex
	// votes counts the answers until they decide the outcome under
	// f.rule (then decided is set and voted signalled, for the caller);
	// later answers are not counted.
	votes   tally
	decided bool
	voted   sync.Cond
	// verdict is broadcast once settle has set settled and failed, for
	// the calls that undo.
	settled, failed bool
	verdict         sync.Cond

	servers []serverCall
}

// serverCall is one server's call of a fan-out.
type serverCall struct {
	// done is closed once the call, and its undo if any, have finished.
	done chan struct{}
	// ok is the server's answer, written before done is closed: read it
	// after that close.
	ok bool
	// granted: the server granted before the outcome was decided, so the
	// undo of a failed verdict waits for it (bg.mu guards it until then).
	granted bool
}

// fanOutConcurrent calls every server on its own goroutine, except those
// that f calls not at all (see fan.only) and has nothing to undo on, which
// vote for at once. Each
// call counts its own answer, and the caller wakes once, when the votes
// decide.
func (c *Client) fanOutConcurrent(ctx context.Context, f fan) fanned {
	n := len(c.servers)
	bg := &background{f: f, ctx: ctx, servers: make([]serverCall, n)}
	bg.votes.n = n
	bg.voted.L, bg.verdict.L = &bg.mu, &bg.mu
	r := fanned{done: make([]<-chan struct{}, n), bg: bg}
	calls := n
	for i := range c.servers {
		if !f.undo && f.only != 0 && f.only&bit(i) == 0 { // as fan.call would answer
			calls--
			r.done[i] = closedChan
			if f.after != nil {
				r.done[i] = f.after[i] // what a call here would have followed
			}
			bg.servers[i].ok = true
			c.observe(ctx, f.op, f.name, i, nil)
			bg.count(i, vote{server: i, ok: true})
		}
	}
	if calls > 0 {
		bg.callCtx, bg.cancel = c.clock.WithTimeout(ctx, f.timeout)
		bg.pending.Store(int32(calls))
		c.bg.Add(calls)
	}
	for i, ks := range c.servers {
		if r.done[i] == nil {
			bg.servers[i].done = make(chan struct{})
			r.done[i] = bg.servers[i].done
			go c.serve(bg, i, ks)
		}
	}
	bg.mu.Lock()
	for !bg.decided {
		bg.voted.Wait()
	}
	r.tally = bg.votes
	bg.mu.Unlock()
	return r
}

// serve makes server i's call of the fan-out bg, counts its answer, and
// undoes the call if the fan-out undoes and its verdict is a failure.
func (c *Client) serve(bg *background, i int, ks keyserver.KeyServer) {
	defer c.bg.Done()
	s := &bg.servers[i]
	defer close(s.done)
	ok, v, h, err := c.callAfter(bg, i, ks)
	s.ok = ok
	if bg.pending.Add(-1) == 0 {
		bg.cancel()
	}
	c.observe(bg.ctx, bg.f.op, bg.f.name, i, err)
	bg.count(i, vote{server: i, ok: ok, n: v, holder: h, err: err})
	if bg.f.undo && bg.awaitVerdict() {
		c.undo(bg.ctx, &bg.f, i, ks)
	}
}

// count counts server i's answer v, unless the outcome was decided
// already, and wakes the caller when v decides it.
func (bg *background) count(i int, v vote) {
	bg.mu.Lock()
	defer bg.mu.Unlock()
	if bg.decided {
		return
	}
	bg.votes.add(v)
	bg.servers[i].granted = v.ok
	if bg.votes.decided(bg.f.rule) {
		bg.decided = true
		bg.voted.Signal()
	}
}

// settle records the fan-out's verdict and wakes the calls waiting for it.
func (bg *background) settle(failed bool) {
	bg.mu.Lock()
	bg.settled, bg.failed = true, failed
	bg.mu.Unlock()
	bg.verdict.Broadcast()
}

// awaitVerdict waits for settle and reports whether the fan-out failed.
func (bg *background) awaitVerdict() bool {
	bg.mu.Lock()
	defer bg.mu.Unlock()
	for !bg.settled {
		bg.verdict.Wait()
	}
	return bg.failed
}

// callAfter makes server i's call once the calls it must follow have
// finished. A call that had to wait gets a timeout of its own, as the
// shared one started with the fan-out; one that turns out to need no call
// gets none.
func (c *Client) callAfter(bg *background, i int, ks keyserver.KeyServer) (bool, uint64, keyserver.Holder, error) {
	f, callCtx := &bg.f, bg.callCtx
	if f.after != nil {
		waited := false
		select {
		case <-f.after[i]:
		default:
			<-f.after[i]
			waited = true
		}
		if f.unlessGranted != nil && f.unlessGranted.servers[i].ok {
			return true, 0, keyserver.Holder{}, nil
		}
		if waited {
			own, cancel := c.clock.WithTimeout(bg.ctx, f.timeout)
			defer cancel()
			callCtx = own
		}
	}
	return f.call(callCtx, i, ks)
}
