package redlock

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/goredlock/goredlock/internal/clock"
	"github.com/goredlock/goredlock/keyserver"
)

// background is the state a fan-out shares with its calls still running:
// one allocation for the fan-out and its per-server state, its channel and
// timer in a few more, as allocations under load are the client's cost.
type background struct {
	c       *Client
	f       fan
	ctx     context.Context // the caller's
	callCtx context.Context // bounded by f.timeout from the fan-out's start; nil if no goroutine calls
	cancel  context.CancelFunc
	pending atomic.Int32 // goroutines' calls still running; the last one cancels callCtx

	mu sync.Mutex
	// votes counts the answers until they decide the outcome under
	// f.rule (then decided is set and voted closed, for the caller);
	// later answers are not counted.
	votes   tally
	decided bool
	voted   chan struct{}
	// waiting counts the started calls that have neither answered nor
	// expired; timer expires them at the deadline, and is stopped when
	// none is left (see started.go).
	waiting int
	timer   clock.Timer
	// verdict is broadcast once settle has set settled and failed, for
	// the calls that undo.
	settled, failed bool
	verdict         sync.Cond

	servers []serverCall
}

// serverCall is one server's call of a fan-out.
type serverCall struct {
	// ok is the server's answer, written before answered is set (under
	// the mutex) and before done is closed.
	ok bool
	// answered: the call has finished (bg.mu guards it); granted: it
	// granted before the outcome was decided, so that the undo of a
	// failed verdict waits for it.
	answered, granted bool
	// skipped: the fan-out made no call to the server (see fan.only).
	skipped bool
	// started: the call was started on a Starter (see
	// started.go); expired: it was counted as late; going: its server goes
	// on with it (see serverCall.Continue); overtaken: a later call of the
	// lock was sent before it finished (see serverCall.overtake); parked:
	// it answered or expired, and waits for the verdict of a fan-out that
	// undoes (all but started under bg.mu).
	// undoing: it is being undone (see afterVerdict); refused: it answered
	// that it stored nothing (see fan.storedNothing), so is not undone.
	started, expired, going, overtaken, parked, undoing, refused bool
	bg                                                           *background
	i                                                            int
	// state and done tell when the call, and its undo if any, have
	// finished: done is made only for a call still running at the
	// verdict, which most are not (see watch).
	state atomic.Int32
	done  chan struct{}
}

// The states of a serverCall.
const (
	callRunning  int32 = iota
	callWatched        // running, and done is to be closed when it finishes
	callFinished       // done, if made, is closed
)

// fanOutConcurrent starts every server's call on a Starter
// where it can (see started.go) and calls the others on a goroutine each,
// except those that f calls not at all (see fan.only) and has nothing to
// undo on, which vote for at once. Each call counts its own answer, and
// the caller wakes once, when the votes decide.
func (c *Client) fanOutConcurrent(ctx context.Context, f fan) fanned {
	n := len(c.servers)
	bg := &background{c: c, f: f, ctx: ctx, servers: make([]serverCall, n), voted: make(chan struct{})}
	bg.votes.n = n
	bg.verdict.L = &bg.mu
	calls, made := c.skip(ctx, bg)
	c.bg.Add(calls)
	started := 0
	if c.starters != nil && calls > 0 && f.startable() {
		// The timer is armed first, and counts every call as waiting:
		// the calls started first may answer before the last one starts.
		deadline := c.clock.Now().Add(f.timeout)
		bg.waiting = calls
		bg.timer = c.clock.AfterFunc(f.timeout, bg.timedOut)
		for i := range c.servers {
			if !bg.servers[i].skipped && c.startCall(bg, i, deadline) {
				started++
			}
		}
		bg.mu.Lock()
		if bg.waiting -= calls - started; bg.waiting == 0 {
			bg.timer.Stop()
		}
		bg.mu.Unlock()
	}
	if calls > started {
		bg.callCtx, bg.cancel = c.clock.WithTimeout(ctx, f.timeout)
		bg.pending.Store(int32(calls - started))
		for i, ks := range c.servers {
			if s := &bg.servers[i]; !s.skipped && !s.started {
				go c.serve(bg, i, ks)
			}
		}
	}
	if started > 0 && ctx.Done() != nil {
		bg.await(ctx)
	}
	<-bg.voted
	bg.mu.Lock()
	r := fanned{tally: bg.votes, bg: bg, made: made}
	bg.mu.Unlock()
	return r
}

// skip counts at once the votes of the servers bg does not call: those
// f calls not at all, and those whose breaker is open. It returns how many
// calls are to be made, and the servers the lock's calls were made to.
func (c *Client) skip(ctx context.Context, bg *background) (calls int, made uint64) {
	f := &bg.f
	calls, made = len(c.servers), f.after.made
	for i := range c.servers {
		s := &bg.servers[i]
		s.bg, s.i = bg, i
		switch {
		case !f.undo && f.only != 0 && f.only&bit(i) == 0: // as fan.call would answer
			calls--
			s.ok, s.skipped = true, true
			s.state.Store(callFinished)
			bg.count(i, vote{server: i, ok: true})
		case f.mustCall(i):
			made |= bit(i)
		default:
			if err := c.health.breakers[i].allow(c.clock); err != nil {
				// Not called: it stored nothing, and there is nothing to undo.
				calls--
				s.skipped, s.refused = true, true
				s.state.Store(callFinished)
				c.observe(ctx, f.op, f.name, i, err)
				bg.count(i, vote{server: i, err: err})
				continue
			}
			made |= bit(i)
		}
	}
	return calls, made
}

// serve makes server i's call of the fan-out bg, counts its answer, and
// undoes the call if the fan-out undoes and its verdict is a failure.
func (c *Client) serve(bg *background, i int, ks keyserver.KeyServer) {
	defer c.bg.Done()
	s := &bg.servers[i]
	defer func() {
		if s.state.Swap(callFinished) == callWatched {
			close(s.done)
		}
	}()
	ok, v, h, err := c.callAfter(bg, i, ks)
	s.ok = ok
	if bg.pending.Add(-1) == 0 {
		bg.cancel()
	}
	c.heard(bg.ctx, &bg.f, i, err)
	bg.count(i, vote{server: i, ok: ok, n: v, holder: h, err: err})
	if errors.Is(err, errNotSent) {
		// Not sent, it still ends only after the call it would have
		// followed: the lock's next call to the server follows that one
		// through it.
		<-bg.f.after.done[i]
		return
	}
	if bg.f.undo && bg.awaitVerdict() && !bg.f.storedNothing(ok, err) {
		c.undo(bg.ctx, &bg.f, i, ks)
	}
}

// count records server i's answer v and counts it, unless the outcome was
// decided already, waking the caller when v decides it.
func (bg *background) count(i int, v vote) {
	bg.mu.Lock()
	defer bg.mu.Unlock()
	bg.servers[i].answered = true
	if bg.decided || bg.servers[i].expired {
		return
	}
	bg.countLocked(i, v)
}

// countLocked counts server i's answer v, the outcome not decided yet.
// bg.mu must be held.
func (bg *background) countLocked(i int, v vote) {
	bg.votes.add(v)
	bg.servers[i].granted = v.ok
	if bg.votes.decided(bg.f.rule) {
		bg.decided = true
		close(bg.voted)
	}
}

// settle records the fan-out's verdict, wakes the calls waiting for it,
// and returns the fan-out's done (see fanned): a call that answered is
// done unless an undo follows, and one the fan-out did not make is done
// once the call it would have followed is.
func (bg *background) settle(failed bool) (done []<-chan struct{}) {
	bg.mu.Lock()
	bg.settled, bg.failed = true, failed
	undoes := failed && bg.f.undo
	var buf [8]int
	parked := buf[:0]
	for i := range bg.servers {
		s := &bg.servers[i]
		if s.parked {
			parked = append(parked, i)
			s.parked, s.undoing = false, undoes && !s.refused
		}
		var ch <-chan struct{}
		switch {
		case s.skipped:
			if after := bg.f.after.done; after != nil && !closed(after[i]) {
				ch = after[i]
			}
		case !s.answered || undoes:
			ch = s.watch()
		}
		if ch == nil {
			continue
		}
		if done == nil {
			done = make([]<-chan struct{}, len(bg.servers))
			for j := range done {
				done[j] = closedChan
			}
		}
		done[i] = ch
	}
	bg.mu.Unlock()
	bg.verdict.Broadcast()
	for _, i := range parked {
		s := &bg.servers[i]
		s.afterVerdict(s.undoing)
	}
	return done
}

// watch returns a channel closed once the call has finished, or nil if it
// has already.
func (s *serverCall) watch() <-chan struct{} {
	if s.state.Load() == callFinished {
		return nil
	}
	s.done = make(chan struct{})
	if !s.state.CompareAndSwap(callRunning, callWatched) {
		return nil // it finished meanwhile
	}
	return s.done
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
// finished, unless the call it follows granted what this one would undo
// (see fan.unlessGranted). A clean-up waits as long as that takes; any
// other call no longer than its deadline ("The calls of one lock go in
// order" in docs/design.md).
func (c *Client) callAfter(bg *background, i int, ks keyserver.KeyServer) (bool, uint64, keyserver.Holder, error) {
	f, callCtx := &bg.f, bg.callCtx
	waited := false
	if after := f.after.done; after != nil {
		select {
		case <-after[i]:
		default:
			if !f.cleansUp() {
				select {
				case <-after[i]:
				case <-callCtx.Done():
					return false, 0, keyserver.Holder{}, fmt.Errorf("%s %q: %w: %w", f.op, f.key, errNotSent, callCtx.Err())
				}
				break
			}
			<-after[i]
			waited = true
		}
	}
	if waited && c.health.breakers[i].open.Load() {
		// A clean-up that waited for a server that stopped answering: queuing
		// more calls behind it would chain every later call of the key.
		return false, 0, keyserver.Holder{}, fmt.Errorf("%s %q: %w", f.op, f.key, errServerDown)
	}
	if f.unlessGranted != nil && f.unlessGranted.servers[i].ok {
		return true, 0, keyserver.Holder{}, nil
	}
	if waited {
		own, cancel := c.clock.WithTimeout(bg.ctx, f.timeout)
		defer cancel()
		callCtx = own
	}
	return c.call(callCtx, f, i)
}
