package redlock

import (
	"time"

	"github.com/goredlock/goredlock/internal/startcall"
	"github.com/goredlock/goredlock/keyserver"
)

// startable reports whether f's calls are ones a startcall.Starter
// starts: a lock's or a set's acquire, extend and release.
func (f *fan) startable() bool {
	switch f.op {
	case opAcquire, opAcquireInLine, opExtend, opRelease:
		return f.kind.traits().startable
	}
	return false
}

// startCall starts server i's call of bg, and reports whether it did;
// if not (no Starter, an earlier call to wait for, declined), block makes it.
func (c *Client) startCall(bg *background, i int, deadline time.Time) bool {
	f, ks := &bg.f, c.starters[i]
	if ks == nil || !f.asks(i) || !c.identities.known[i].Load() {
		return false // an unknown server is asked who it is first, by the adapter (see identities)
	}
	if after := f.after.done; after != nil && !closed(after[i]) && (f.after.of == nil || !f.after.of.servers[i].overtake()) {
		return false
	}
	call := startcall.Call{Key: f.key, Token: f.token, TTL: f.ttl, Deadline: deadline,
		Incarnation: f.quarantine.q != nil && f.quarantine.q.judged[i] != nil}
	_, notifier := c.servers[i].(keyserver.Notifier)
	if s := f.kind.several(); s != nil {
		call.Keys, notifier = s.keys, true // a set's acquire is AcquireAll, which reports the holder
		if f.op == opRelease {
			call.Lines = s.lineKeys()
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
	s.started, s.phase = true, callSending // before the answer can come; under mu for expire
	bg.mu.Unlock()
	if ks.Start(bg.ctx, call, s) {
		return true
	}
	bg.mu.Lock()
	defer bg.mu.Unlock()
	if s.late {
		// The deadline passed while Start ran: expire has counted it late
		// and ended it, so it is not to be made again.
		return true
	}
	s.started, s.phase = false, callGoing
	return false
}

// Continue tells the server whether to go on with the call: not once it
// is late or overtaken, nor once its attempt failed (the rest could only
// grant what the undo takes back, and would hold the key a moment after
// the caller returned). A call that goes on is not counted late; its
// server bounds the rest by the deadline.
func (s *serverCall) Continue() bool {
	bg := s.bg
	bg.mu.Lock()
	failed := bg.settled && bg.failed && bg.f.op == opAcquire
	switch {
	case (s.phase == callSending || s.phase == callGoing) && !failed:
		s.phase = callGoing
		bg.mu.Unlock()
		return true
	case s.phase <= callStopped:
		next := s.endLocked(true) // it ends here, having granted nothing
		bg.mu.Unlock()
		s.then(next)
		return false
	}
	bg.mu.Unlock()
	return false
}

// overtake reports whether a later call of the lock to the server may be
// sent before this one has finished, and lets it ("Overtaking" in
// docs/design.md).
func (s *serverCall) overtake() bool {
	bg := s.bg
	bg.mu.Lock()
	defer bg.mu.Unlock()
	if !s.started {
		return false
	}
	switch s.phase {
	case callSending:
		if bg.f.op != opRelease && !bg.f.final {
			s.phase = callStopped
		}
		return true
	case callStopped, callEnded: // it sends nothing more
		return true
	}
	return false
}

// mayJoinLine returns the servers of mask on which the fan-out's acquire
// may yet put its caller in line (see outOfLine).
func (bg *background) mayJoinLine(mask uint64) uint64 {
	for i := range min(len(bg.servers), 63) {
		if mask&bit(i) != 0 && bg.servers[i].outOfLine() {
			mask &^= bit(i)
		}
	}
	return mask
}

// outOfLine reports whether the acquire cannot put its caller in line: it
// granted, or it sent nothing but its SET NX and is now stopped there or late.
func (s *serverCall) outOfLine() bool {
	bg := s.bg
	bg.mu.Lock()
	defer bg.mu.Unlock()
	switch s.phase {
	case callParked, callUndoing, callEnded:
		return s.ok || s.late
	case callSending:
		s.phase = callStopped
		return true
	case callStopped:
		return true
	}
	return false
}

// Complete takes the answer of the server's started call, judged by the
// quarantine as fan.call judges; one that comes late is dropped.
func (s *serverCall) Complete(a startcall.Answer) {
	if s.isLate() { // spares the quarantine's look; take looks again
		return
	}
	f := &s.bg.f
	ok, err := f.quarantine.answer(s.i, f.ttl, a.OK, a.Err, a.Incarnation, a.IncarnationErr)
	v := vote{server: s.i, ok: ok, holder: a.Holder, err: err}
	if err != nil {
		go s.hand(v) // the hook and the logger hear of it, off the server's reader
		return
	}
	s.hand(v)
}
