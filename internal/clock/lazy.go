package clock

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// lazyDeadline is the context Real.WithTimeout returns: its deadline is
// known at once, but the runtime timer that ends it is armed only when
// something waits on Done. Most calls the client bounds this way are
// answered before anyone waits (a lone caller's call on an idle Redis
// connection is made inline, bounded by the connection's own read
// deadline, which it takes from Deadline), and arming a timer for each of
// them, and stopping it, was a twentieth of such a lock and unlock: on a
// machine with an idle core the timer also wakes a thread to watch it.
// Armed, it is one channel and one timer, where context.WithDeadline's is
// twice as many allocations: queued calls under load arm theirs.
//
// It reports what context.WithDeadline's context would: Err is
// DeadlineExceeded from the deadline on, whether or not Done was asked
// for, and Canceled after cancel; values come from the parent. (Only
// context.Cause of a context that ended by its own deadline or cancel
// under a parent that has not ended differs: it is the parent's, nil.)
type lazyDeadline struct {
	parent   context.Context
	deadline time.Time

	armed atomic.Bool // done is made
	mu    sync.Mutex
	done  chan struct{}
	err   error // why it ended; nil while it has not
	timer *time.Timer
	// unhook stops the parent's call of end; afters are the functions
	// registered by AfterFunc (contexts derived from this one), by key.
	unhook func() bool
	afters map[*func()]struct{}
}

// withLazyDeadline is context.WithDeadline(parent, d) with the timer
// armed on the first call of Done (see lazyDeadline).
func withLazyDeadline(parent context.Context, d time.Time) (context.Context, context.CancelFunc) {
	if pd, ok := parent.Deadline(); ok && pd.Before(d) {
		d = pd // the parent ends first, as WithDeadline's Deadline says
	}
	l := &lazyDeadline{parent: parent, deadline: d}
	return l, l.stop
}

// Unarmed reports whether ctx is a context of Real.WithTimeout whose timer
// has not been armed, and returns its parent's Done channel (nil for a
// parent that is never cancelled): see the method Unarmed.
func Unarmed(ctx context.Context) (parentDone <-chan struct{}, ok bool) {
	l, ok := ctx.(*lazyDeadline)
	if !ok {
		return nil, false
	}
	return l.Unarmed()
}

// Unarmed reports whether the context's timer has not been armed, and
// returns its parent's Done channel (nil for a parent that is never
// cancelled). A waiter that bounds its wait by the context's Deadline some
// cheaper way (one timer for many waiters, as the Redis pipeline does,
// which finds this method by an interface) then watches only that
// channel, and no timer is armed for the context at all.
//
// What such a waiter does not see is the context's own cancel: the client
// cancels a context of WithTimeout only once the calls made with it have
// returned, so that cancel ends nothing anyone waits for.
func (l *lazyDeadline) Unarmed() (parentDone <-chan struct{}, ok bool) {
	if l.armed.Load() {
		return nil, false
	}
	return l.parent.Done(), true
}

// Deadline returns the deadline the context was made with.
func (l *lazyDeadline) Deadline() (time.Time, bool) { return l.deadline, true }

// Done arms the timer, the first time, and returns the channel that
// closes when the context ends.
func (l *lazyDeadline) Done() <-chan struct{} {
	if l.armed.Load() {
		return l.done
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.done != nil {
		return l.done
	}
	l.done = make(chan struct{})
	l.armed.Store(true)
	if l.err == nil {
		l.err = l.parent.Err()
	}
	left := time.Until(l.deadline)
	if l.err == nil && left <= 0 {
		l.err = context.DeadlineExceeded
	}
	if l.err != nil {
		close(l.done)
		return l.done
	}
	l.timer = time.AfterFunc(left, func() { l.end(context.DeadlineExceeded) })
	if l.parent.Done() != nil {
		l.unhook = context.AfterFunc(l.parent, func() { l.end(l.parent.Err()) })
	}
	return l.done
}

// stop is the context's CancelFunc.
func (l *lazyDeadline) stop() { l.end(context.Canceled) }

// end ends the context with err, unless it has ended: it closes done if
// Done made it, stops the timer and the parent's hook, and runs what
// AfterFunc registered, each in its own goroutine.
func (l *lazyDeadline) end(err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err != nil {
		return
	}
	l.err = err
	if l.done != nil {
		close(l.done)
	}
	if l.timer != nil {
		l.timer.Stop()
	}
	if l.unhook != nil {
		l.unhook()
	}
	for f := range l.afters {
		go (*f)()
	}
	l.afters = nil
}

// Err reports why the context has ended, if it has: the parent's reason,
// Canceled after cancel, or DeadlineExceeded from the deadline on. It ends
// the context when it finds the parent ended or the deadline passed, so
// that Done is closed whenever Err is not nil.
func (l *lazyDeadline) Err() error {
	l.mu.Lock()
	err := l.err
	l.mu.Unlock()
	if err != nil {
		return err
	}
	switch {
	case l.parent.Err() != nil:
		l.end(l.parent.Err())
	case time.Until(l.deadline) <= 0:
		l.end(context.DeadlineExceeded)
	default:
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.err
}

// Value returns the parent's value of key: the context adds none.
func (l *lazyDeadline) Value(key any) any { return l.parent.Value(key) }

// AfterFunc arranges for f to run in its own goroutine once the context
// has ended, and returns a function that stops that if it has not happened
// yet, reporting whether it did. The context package uses it for contexts
// derived from this one, which would otherwise each need a goroutine to
// watch Done; it arms the timer.
func (l *lazyDeadline) AfterFunc(f func()) (stop func() bool) {
	l.Done()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err != nil {
		go f()
		return func() bool { return false }
	}
	key := &f
	if l.afters == nil {
		l.afters = make(map[*func()]struct{})
	}
	l.afters[key] = struct{}{}
	return func() bool {
		l.mu.Lock()
		defer l.mu.Unlock()
		_, pending := l.afters[key]
		delete(l.afters, key)
		return pending
	}
}
