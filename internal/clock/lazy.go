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
//
// It reports what context.WithDeadline's context would: Err is
// DeadlineExceeded from the deadline on, whether or not Done was asked
// for, and Canceled after cancel; values come from the parent. (Only
// context.Cause of a context past its deadline that nobody waited on
// differs: it is the parent's cause, nil if the parent has not ended.)
type lazyDeadline struct {
	parent   context.Context
	deadline time.Time

	inner    atomic.Pointer[context.Context] // the timer's context, once armed
	canceled atomic.Bool
	mu       sync.Mutex // arm and stop
	cancel   context.CancelFunc
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

// arm returns the context that carries the timer, made the first time.
func (l *lazyDeadline) arm() context.Context {
	if inner := l.inner.Load(); inner != nil {
		return *inner
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if inner := l.inner.Load(); inner != nil {
		return *inner
	}
	ctx, cancel := context.WithDeadline(l.parent, l.deadline)
	l.cancel = cancel
	if l.canceled.Load() {
		cancel()
	}
	l.inner.Store(&ctx)
	return ctx
}

// stop is the context's CancelFunc. Unarmed, it only records the cancel:
// there is no timer to stop, and a later Done arms a context that has
// ended.
func (l *lazyDeadline) stop() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.canceled.Swap(true) {
		return
	}
	if l.cancel != nil {
		l.cancel()
	}
}

// Deadline returns the deadline the context was made with.
func (l *lazyDeadline) Deadline() (time.Time, bool) { return l.deadline, true }

// Done arms the timer, the first time, and returns the channel it closes.
func (l *lazyDeadline) Done() <-chan struct{} { return l.arm().Done() }

// Err reports why the context has ended, if it has: the parent's reason,
// Canceled after cancel, or DeadlineExceeded from the deadline on.
func (l *lazyDeadline) Err() error {
	if inner := l.inner.Load(); inner != nil {
		return (*inner).Err()
	}
	if err := l.parent.Err(); err != nil {
		return err
	}
	if l.canceled.Load() {
		return context.Canceled
	}
	if !time.Now().Before(l.deadline) {
		return context.DeadlineExceeded
	}
	return nil
}

// Value returns the value of key, which the context does not add to.
// Once the timer context exists it answers, so that contexts derived from
// this one find its cancellation without a goroutine.
func (l *lazyDeadline) Value(key any) any {
	if inner := l.inner.Load(); inner != nil {
		return (*inner).Value(key)
	}
	return l.parent.Value(key)
}
