package redigotransport

import (
	"sync"
	"time"
)

// lazyContext is a context whose timer is armed only once something
// waits on its Done, as the redlock client's per-call contexts are: a
// caller that bounds its wait by the context's Deadline some cheaper way
// (the expiry) watches only the channel Unarmed returns, and no timer is
// armed for the context at all. What it does not see is the context's own
// cancel, which such a context's maker calls only once the calls made
// with it have returned.
type lazyContext interface {
	// Unarmed reports whether the context's timer is still unarmed, and
	// returns the Done channel of what else can end it, its parent (nil
	// when nothing can).
	Unarmed() (parentDone <-chan struct{}, ok bool)
}

// expiry ends, at their deadline, the waits of callers whose context has
// no timer of its own (a lazyContext not armed yet). A queued call's
// caller would otherwise arm it, and stop it once answered: with 64 goroutines on one node, 8 % of the client's CPU, and
// the select on two channels as much again. Here one timer serves every
// call of the pipeline: it is armed for the earliest deadline, and when it
// fires, the calls past theirs are ended and it is armed for the next.
// Most calls are answered before; the timer is not moved for them, and
// finds nothing to do when it fires early.
//
// A call it ends goes on: its reply is read and dropped, as that of a
// caller whose context ended. The caller and whoever answers the call
// settle who recycles it by the call's state (see call.finish and
// pipeline.await).
type expiry struct {
	mu      sync.Mutex
	head    *call // the calls waiting, linked by call.prev and call.next
	timer   *time.Timer
	armedAt time.Time // when the timer fires; zero while it is not armed
}

// add watches c's deadline, c.due, until remove.
func (e *expiry) add(c *call) {
	e.mu.Lock()
	defer e.mu.Unlock()
	c.linked, c.prev, c.next = true, nil, e.head
	if e.head != nil {
		e.head.prev = c
	}
	e.head = c
	if e.armedAt.IsZero() || c.due.Before(e.armedAt) {
		e.armLocked(c.due)
	}
}

// remove stops watching c, if it still does.
func (e *expiry) remove(c *call) {
	e.mu.Lock()
	e.unlinkLocked(c)
	e.mu.Unlock()
}

func (e *expiry) unlinkLocked(c *call) {
	if !c.linked {
		return
	}
	if c.prev != nil {
		c.prev.next = c.next
	} else {
		e.head = c.next
	}
	if c.next != nil {
		c.next.prev = c.prev
	}
	c.linked, c.prev, c.next = false, nil, nil
}

// armLocked sets the timer to fire at t.
func (e *expiry) armLocked(t time.Time) {
	e.armedAt = t
	if e.timer == nil {
		e.timer = time.AfterFunc(time.Until(t), e.fire)
		return
	}
	e.timer.Reset(time.Until(t))
}

// fire ends the waits of the calls past their deadline, and arms the timer
// for the earliest deadline of the others.
func (e *expiry) fire() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.armedAt = time.Time{}
	now := time.Now()
	var next time.Time
	for c := e.head; c != nil; {
		following := c.next
		switch {
		case c.due.After(now):
			if next.IsZero() || c.due.Before(next) {
				next = c.due
			}
		case c.state.CompareAndSwap(waiting, overDeadline):
			e.unlinkLocked(c)
			c.done <- struct{}{} // the one signal: finish sees overDeadline and sends none
		}
		// Else answered: its caller removes it.
		c = following
	}
	if !next.IsZero() {
		e.armLocked(next)
	}
}

// stop disarms the timer, and waits for a fire in progress to end.
func (e *expiry) stop() {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.timer != nil {
		e.timer.Stop()
	}
	e.armedAt = time.Time{}
}
