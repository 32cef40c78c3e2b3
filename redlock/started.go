package redlock

import (
	"context"
	"fmt"
	"github.com/goredlock/goredlock/internal/startcall"
	"time"

	"github.com/goredlock/goredlock/keyserver"
)

// starters returns each server as a startcall.Starter, or nil when none is.
// A started call's answer is handed over by the server's reader instead of
// a goroutine per server per call ("Started calls" in docs/design.md).
func starters(servers []keyserver.KeyServer) []startcall.Starter {
	var st []startcall.Starter
	for i, s := range servers {
		if is, ok := s.(startcall.Starter); ok {
			if st == nil {
				st = make([]startcall.Starter, len(servers))
			}
			st[i] = is
		}
	}
	return st
}

// startable reports whether f's calls are ones a startcall.Starter
// starts: a lock's or a set's acquire, extend and release.
func (f *fan) startable() bool {
	switch f.op {
	case opAcquire, opAcquireInLine, opExtend, opRelease:
		_, set := f.prim.(*setOps)
		return (f.prim == nil || set) && f.delay == 0 // a lock-delay's calls go through keyserver.Delayer's view
	}
	return false
}

// startCall starts server i's call of bg, and reports whether it did:
// false when the server is no Starter, the call must wait for the lock's
// earlier calls to the server, or the server declined.
func (c *Client) startCall(bg *background, i int, deadline time.Time) bool {
	f, ks := &bg.f, c.starters[i]
	if ks == nil || (f.only != 0 && f.only&bit(i) == 0) || !c.identities.known[i].Load() {
		return false // an unknown server is asked who it is first, on a goroutine (see identities)
	}
	if after := f.after.done; after != nil && !closed(after[i]) && (f.after.of == nil || !f.after.of.servers[i].overtake()) {
		return false
	}
	call := startcall.Call{Key: f.key, Token: f.token, TTL: f.ttl, Deadline: deadline,
		Incarnation: f.quarantine.q != nil && f.quarantine.q.judged[i] != nil}
	_, notifier := ks.(keyserver.Notifier)
	if so, ok := f.prim.(*setOps); ok {
		call.Keys, notifier = so.keys, true // a set's acquire is AcquireAll, which reports the holder
		if f.op == opRelease {
			call.Lines = so.lineKeys()
		}
	}
	switch {
	case f.op == opAcquire && notifier:
		call.Op = startcall.CallAcquireOrHolder
	case f.op == opAcquireInLine && notifier:
		call.Op, call.Next = startcall.CallAcquireInLine, f.next
	case f.op == opAcquire || f.op == opAcquireInLine:
		call.Op = startcall.CallAcquire
	case f.op == opExtend:
		call.Op = startcall.CallExtend
	default:
		call.Op = startcall.CallRelease
	}
	s := &bg.servers[i]
	bg.mu.Lock()
	s.started = true // before the answer can come; under mu for expire
	bg.mu.Unlock()
	if ks.Start(bg.ctx, call, s) {
		return true
	}
	bg.mu.Lock()
	defer bg.mu.Unlock()
	if s.expired {
		// The deadline passed while Start ran: expire has counted the
		// call as late and finished it (or parked it for the verdict),
		// as it would a started call that did not answer. It is not to be
		// made again.
		return true
	}
	s.started = false
	return false
}

// Continue tells the server whether to go on with the call (see
// startcall.Completion): not once it was counted as late. A call that
// goes on is not counted late; its server bounds the rest by the deadline.
func (s *serverCall) Continue() bool {
	bg := s.bg
	bg.mu.Lock()
	switch {
	case s.expired:
		bg.mu.Unlock()
		return false
	case s.overtaken:
		s.answered = true
		next := s.endLocked()
		bg.mu.Unlock()
		if next == doUndo {
			next = noUndo // it ends here, having granted nothing
		}
		s.then(next)
		return false
	}
	s.going = true
	bg.mu.Unlock()
	return true
}

// overtake reports whether a later call of the lock to the server may be
// sent before this call has finished, and lets it: the call has sent only
// its first command, or has ended and is not to be undone. An overtaken
// acquire or extend then sends nothing more ("Overtaking" in docs/design.md).
func (s *serverCall) overtake() bool {
	bg := s.bg
	bg.mu.Lock()
	defer bg.mu.Unlock()
	switch {
	case !s.started:
		return false
	case s.answered || s.expired: // it sends nothing more, unless undone
		return !s.parked && !s.undoing
	case s.going:
		return false
	}
	if bg.f.op != opRelease && !bg.f.final {
		s.overtaken = true
	}
	return true
}

// mayJoinLine returns the servers of mask (see bit) on which the fan-out's
// acquire may yet put its caller in line: not those that granted, nor
// those whose started call is still on its SET NX, which overtake stops
// from going on to the script.
func (bg *background) mayJoinLine(mask uint64) uint64 {
	for i := range min(len(bg.servers), 63) {
		if mask&bit(i) == 0 {
			continue
		}
		if bg.servers[i].outOfLine() {
			mask &^= bit(i)
		}
	}
	return mask
}

// outOfLine reports whether the call, an acquire, cannot put its caller
// in line: it granted, or it is started and has sent nothing but its SET
// NX, and is now stopped there (see overtake).
func (s *serverCall) outOfLine() bool {
	bg := s.bg
	bg.mu.Lock()
	defer bg.mu.Unlock()
	switch {
	case s.answered:
		return s.ok
	case !s.started || s.going:
		return false
	case !s.expired:
		s.overtaken = true
	}
	return true
}

// Complete takes the answer of the server's started call (see
// startcall.Completion): judged by the quarantine as fan.call judges, then
// counted. An answer that comes after the call was counted as late is
// dropped, as a blocking call drops it.
func (s *serverCall) Complete(a startcall.Answer) {
	bg := s.bg
	bg.mu.Lock()
	late := s.expired
	bg.mu.Unlock()
	if late { // spares the quarantine's look; take looks again
		return
	}
	f := &bg.f
	ok, err := a.OK, a.Err
	switch {
	case f.quarantine.q == nil || f.quarantine.q.judged[s.i] == nil:
	case ok:
		ok, err = f.quarantine.judge(s.i, f.ttl, a.Incarnation, a.IncarnationErr)
	case err == nil && a.IncarnationErr == nil: // a refusal: see quarantineRule.see
		f.quarantine.q.sight(s.i, a.Incarnation, f.quarantine.q.clock.Now())
	}
	v := vote{server: s.i, ok: ok, holder: a.Holder, err: err}
	if err != nil {
		go s.take(v) // the hook and the logger hear of it, off the server's reader
		return
	}
	s.take(v)
}

// take reports and counts the server's answer v, and finishes the call,
// unless the fan-out undoes and its verdict is not in yet, or the call
// was counted as late meanwhile. A failure is reported before it counts,
// as a blocking call reports it: the caller's hooks have heard of it when
// the caller returns.
func (s *serverCall) take(v vote) {
	bg := s.bg
	if v.err != nil {
		bg.mu.Lock()
		late := s.expired
		bg.mu.Unlock()
		if late {
			return
		}
	}
	bg.c.observe(bg.ctx, bg.f.op, bg.f.name, s.i, v.err)
	bg.mu.Lock()
	if s.expired {
		bg.mu.Unlock()
		return
	}
	s.answered, s.ok, s.refused = true, v.ok, bg.f.storedNothing(v.ok, v.err)
	if !bg.decided {
		bg.countLocked(s.i, v)
	}
	next := s.endLocked()
	bg.mu.Unlock()
	s.then(next)
}

// endLocked ends the wait for the call, which answered or expired (see
// leftLocked), and returns what to do with it next, parking it until the
// verdict when that is to wait. bg.mu must be held.
func (s *serverCall) endLocked() int {
	next := s.bg.leftLocked()
	if next == doUndo && s.refused {
		next = noUndo
	}
	s.parked, s.undoing = next == parkUndo, next == doUndo
	return next
}

// then does next (see endLocked), bg.mu not held.
func (s *serverCall) then(next int) {
	if next != parkUndo {
		s.afterVerdict(next == doUndo)
	}
}

// What leftLocked says to do with a started call that has answered or
// expired.
const (
	noUndo   = iota // finish it
	doUndo          // undo it, then finish it
	parkUndo        // wait for the verdict: settle decides (see parked)
)

// leftLocked counts the end of a started call's wait, stopping the
// fan-out's timer when it was the last, and says what to do with the call
// next. bg.mu must be held.
func (bg *background) leftLocked() int {
	if bg.waiting--; bg.waiting == 0 {
		bg.timer.Stop()
	}
	switch {
	case !bg.f.undo:
		return noUndo
	case !bg.settled:
		return parkUndo
	case bg.failed:
		return doUndo
	}
	return noUndo
}

// afterVerdict finishes a started call that answered, once the verdict
// is in: after undoing it on a goroutine of its own when undo.
func (s *serverCall) afterVerdict(undo bool) {
	if !undo {
		s.finish()
		return
	}
	go func() {
		bg := s.bg
		bg.c.undo(bg.ctx, &bg.f, s.i, bg.c.servers[s.i])
		s.finish()
	}()
}

// finish marks the call finished (see serverCall.done) for the lock's
// next calls and for Close.
func (s *serverCall) finish() {
	if s.state.Swap(callFinished) == callWatched {
		close(s.done)
	}
	s.bg.c.bg.Done()
}

// await waits until the votes decide, or until the caller's context
// ends: the started calls that have not answered are then counted as
// failed (see expire). The deadline is bg.timer's.
func (bg *background) await(ctx context.Context) {
	select {
	case <-bg.voted:
	case <-ctx.Done():
		bg.expire(ctx.Err())
	}
}

// timedOut is expire at the deadline.
func (bg *background) timedOut() { bg.expire(context.DeadlineExceeded) }

// expire ends the wait for the started calls that have not answered, as
// a blocking call returns at its deadline: each is counted as failed with
// err if the outcome is not decided yet, reported, and finished (or
// undone, or parked until the verdict, as an answer would be); an answer
// that comes later is dropped. A call its server goes on with (see
// Continue) is left to end by itself, bounded by the same deadline.
func (bg *background) expire(err error) {
	var buf [8]int
	late := buf[:0]
	bg.mu.Lock()
	for i := range bg.servers {
		s := &bg.servers[i]
		if s.started && !s.answered && !s.expired && !s.going {
			// From now on nobody else counts or finishes it; and until
			// it is counted below, it may yet be undone (see overtake).
			s.expired, s.undoing = true, bg.f.undo
			late = append(late, i)
		}
	}
	bg.mu.Unlock()
	if len(late) == 0 {
		return
	}
	err = fmt.Errorf("%s %q: no answer: %w", bg.f.op, bg.f.key, err)
	for _, i := range late { // reported before they count, as in take
		bg.c.observe(bg.ctx, bg.f.op, bg.f.name, i, err)
	}
	next := make([]int, len(late))
	bg.mu.Lock()
	for k, i := range late {
		if !bg.decided {
			bg.countLocked(i, vote{server: i, err: err})
		}
		next[k] = bg.servers[i].endLocked()
	}
	bg.mu.Unlock()
	for k, i := range late {
		bg.servers[i].then(next[k])
	}
}
