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

// background is the state a fan-out shares with its calls still running,
// in one allocation with its per-server state.
type background struct {
	c   *Client
	f   fan
	ctx context.Context // the caller's

	mu sync.Mutex
	// votes counts the answers until they decide under f.rule (then
	// decided is set and voted closed); later answers are not counted.
	votes   tally
	decided bool
	voted   chan struct{}
	// waiting counts the started calls that have neither answered nor
	// expired; timer expires them at the deadline.
	waiting int
	timer   clock.Timer
	// settled and failed are the verdict (see settle).
	settled, failed bool

	// callCtx bounds the blocking calls (serverCall.block) by f.timeout
	// from the start; nil if none. The last of blocking cancels it.
	callCtx  context.Context
	cancel   context.CancelFunc
	blocking atomic.Int32

	servers []serverCall
}

// serverCall is one server's call of a concurrent fan-out, started on a
// Starter or made blocking by block, with one lifecycle either way (the
// phases of "Started calls" in docs/design.md, under bg.mu).
type serverCall struct {
	// ok is the answer, written with the phase that ends the wait for it.
	ok    bool
	phase callPhase
	// Under bg.mu, started written by the fan-out's goroutine only.
	// started: on a Starter (may be overtaken). late: expired, a later
	// answer dropped. granted: counted as a grant, so a failed verdict's
	// undo waits for it.
	started, late, granted bool
	bg                     *background
	i                      int
	// state and done tell when the call and its undo have finished; done
	// is made only for a call still running at the verdict (whenDone).
	state atomic.Int32
	done  chan struct{}
}

// callPhase is where a serverCall is in its lifecycle.
type callPhase uint8

const (
	callGoing   callPhase = iota // answers by itself, bounded by its deadline (also before the call is made)
	callSending                  // started, unanswered: counted late at the deadline
	callStopped                  // sending, and to send nothing after its first command
	callParked                   // answered or late, waiting for the verdict
	callUndoing                  // answered or late, being undone
	callEnded                    // answered or late, done with: finish follows
	callSkipped                  // not made (see skip)
)

// The states of a serverCall.
const (
	callRunning  int32 = iota
	callAwaited        // running, and done is to be closed when it finishes
	callFinished       // done, if made, is closed
)

// countLocked counts v unless the outcome was decided already, waking the
// caller when v decides it. bg.mu must be held.
func (bg *background) countLocked(v vote) {
	if bg.decided {
		return
	}
	bg.votes.add(v)
	bg.servers[v.server].granted = v.ok
	if bg.votes.decided(bg.f.rule) {
		bg.decided = true
		close(bg.voted)
	}
}

// block adapts a blocking call, on a goroutine of its own, to the
// lifecycle of a started one; bg.callCtx bounds it, so it is never late.
func (s *serverCall) block() {
	bg := s.bg
	ok, n, h, err := bg.c.callAfter(bg, s.i)
	if bg.blocking.Add(-1) == 0 {
		bg.cancel()
	}
	next := s.take(vote{server: s.i, ok: ok, n: n, holder: h, err: err})
	if errors.Is(err, errNotSent) {
		// Not sent, it still ends only after the call it would have
		// followed, so that the lock's next call follows that one.
		<-bg.f.after.done[s.i]
	}
	s.then(next)
}

// callAfter makes server i's call once the calls it must follow have
// finished ("The calls of one lock go in order" in docs/design.md), unless
// the call it follows granted what this one would undo (fan.unlessGranted).
func (c *Client) callAfter(bg *background, i int) (bool, uint64, keyserver.Holder, error) {
	f, callCtx := &bg.f, bg.callCtx
	waited := false
	if after := f.after.done; after != nil && !closed(after[i]) {
		if f.cleansUp() {
			<-after[i]
			waited = true
		} else {
			select {
			case <-after[i]:
			case <-callCtx.Done():
				return false, 0, keyserver.Holder{}, fmt.Errorf("%s %q: %w: %w", f.op, f.key, errNotSent, callCtx.Err())
			}
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

// hand is take, then what take says to do.
func (s *serverCall) hand(v vote) { s.then(s.take(v)) }

// take reports and counts the answer v unless the call is late, and says
// what to do next. A failure is reported before it counts, so the caller's
// hooks have heard of it when the caller returns.
func (s *serverCall) take(v vote) int {
	bg := s.bg
	if v.err != nil && s.isLate() { // a late failure is not reported
		return dropped
	}
	bg.c.heard(bg.ctx, &bg.f, s.i, v.err)
	bg.mu.Lock()
	defer bg.mu.Unlock()
	if s.late {
		return dropped
	}
	s.ok = v.ok
	bg.countLocked(v)
	return s.endLocked(bg.f.storedNothing(v.ok, v.err))
}

// isLate reports whether the call was counted late (see expire).
func (s *serverCall) isLate() bool {
	s.bg.mu.Lock()
	defer s.bg.mu.Unlock()
	return s.late
}

// What then does with a call whose wait has ended.
const (
	finish   = iota // finish it
	doUndo          // undo it, then finish it
	parkUndo        // nothing: settle decides (see callParked)
	dropped         // nothing: it was counted late, and expire does it
)

// endLocked moves a call that answered or expired to its next phase and
// returns what to do next. bg.mu must be held.
func (s *serverCall) endLocked(storedNothing bool) int {
	bg := s.bg
	if s.started {
		if bg.waiting--; bg.waiting == 0 {
			bg.timer.Stop()
		}
	}
	switch {
	case !bg.f.undo || storedNothing || (bg.settled && !bg.failed):
		s.phase = callEnded
		return finish
	case !bg.settled:
		s.phase = callParked
		return parkUndo
	}
	s.phase = callUndoing
	return doUndo
}

// then does next (see endLocked), bg.mu not held: the undo on a goroutine
// of its own, as the caller may be a server's reader.
func (s *serverCall) then(next int) {
	switch next {
	case finish:
		s.finish()
	case doUndo:
		go func() {
			s.bg.c.undo(s.bg.ctx, &s.bg.f, s.i)
			s.finish()
		}()
	}
}

// finish marks the call finished for the lock's next calls and Close.
func (s *serverCall) finish() {
	if s.state.Swap(callFinished) == callAwaited {
		close(s.done)
	}
	s.bg.c.bg.Done()
}

// expire fails, with err, the started calls still sending or stopped, as
// a blocking call returns at its deadline; a later answer is dropped.
func (bg *background) expire(err error) {
	var buf [8]int
	late := buf[:0]
	bg.mu.Lock()
	for i := range bg.servers {
		s := &bg.servers[i]
		if s.phase == callSending || s.phase == callStopped {
			// From now on nobody else counts or finishes it; and until
			// it is ended below, it may yet be undone (see overtake).
			s.late, s.phase = true, callEnded
			if bg.f.undo {
				s.phase = callUndoing
			}
			late = append(late, i)
		}
	}
	bg.mu.Unlock()
	if len(late) == 0 {
		return
	}
	err = fmt.Errorf("%s %q: no answer: %w", bg.f.op, bg.f.key, err)
	for _, i := range late { // reported before they count, as in take
		bg.c.observe(bg.ctx, bg.f.op, bg.f.name, i, bg.f.timeout, err)
	}
	next := make([]int, len(late))
	bg.mu.Lock()
	for k, i := range late {
		bg.countLocked(vote{server: i, err: err})
		next[k] = bg.servers[i].endLocked(false)
	}
	bg.mu.Unlock()
	for k, i := range late {
		bg.servers[i].then(next[k])
	}
}

// settle records the fan-out's verdict, moves the parked calls on, and
// returns the fan-out's done (see fanned); a call not made is done once
// the call it would have followed is.
func (bg *background) settle(failed bool) (done []<-chan struct{}) {
	bg.mu.Lock()
	bg.settled, bg.failed = true, failed
	undoes := failed && bg.f.undo
	var buf [8]int
	parked := buf[:0]
	for i := range bg.servers {
		s := &bg.servers[i]
		if s.phase == callParked {
			parked = append(parked, i)
			s.phase = callEnded
			if undoes {
				s.phase = callUndoing
			}
		}
		var ch <-chan struct{}
		switch {
		case s.phase == callSkipped:
			if after := bg.f.after.done; after != nil && !closed(after[i]) {
				ch = after[i]
			}
		case s.phase <= callStopped || undoes:
			ch = s.whenDone()
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
	next := finish
	if undoes {
		next = doUndo
	}
	for _, i := range parked {
		bg.servers[i].then(next)
	}
	return done
}

// whenDone returns a channel closed once the call finishes; nil if it has.
func (s *serverCall) whenDone() <-chan struct{} {
	if s.state.Load() == callFinished {
		return nil
	}
	s.done = make(chan struct{})
	if !s.state.CompareAndSwap(callRunning, callAwaited) {
		return nil // it finished meanwhile
	}
	return s.done
}
