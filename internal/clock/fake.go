package clock

import (
	"context"
	"errors"
	"sort"
	"sync"
	"time"
)

// Fake is a Clock that moves only when a test calls Advance. Timers,
// sleepers and context deadlines created through it fire during Advance, in
// order of their due time.
type Fake struct {
	mu      sync.Mutex
	cond    *sync.Cond
	now     time.Time
	waiters []*waiter
}

var _ Clock = (*Fake)(nil)

// waiter is one pending AfterFunc timer or Sleep call.
type waiter struct {
	f       *Fake
	due     time.Time
	fn      func()        // for AfterFunc
	wake    chan struct{} // for Sleep
	pending bool
}

// NewFake returns a fake clock reading start.
func NewFake(start time.Time) *Fake {
	f := &Fake{now: start}
	f.cond = sync.NewCond(&f.mu)
	return f
}

// Now returns the fake time.
func (f *Fake) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

// Since returns the fake time elapsed since t.
func (f *Fake) Since(t time.Time) time.Duration { return f.Now().Sub(t) }

// Sleep blocks until Advance has moved the clock by d or ctx ends.
func (f *Fake) Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	w := &waiter{f: f, wake: make(chan struct{})}
	f.add(w, d)
	select {
	case <-w.wake:
		return nil
	case <-ctx.Done():
		w.Stop()
		return ctx.Err()
	}
}

// SleepOrWake is Sleep that also returns when one of wake is closed; it
// counts as a sleeper for BlockUntilSleepers.
func (f *Fake) SleepOrWake(ctx context.Context, d time.Duration, wake []<-chan struct{}) error {
	if d <= 0 {
		return ctx.Err()
	}
	w := &waiter{f: f, wake: make(chan struct{})}
	f.add(w, d)
	err := selectWake(ctx, w.wake, wake)
	w.Stop()
	return err
}

// AfterFunc calls fn in its own goroutine once Advance has moved the clock
// by d.
func (f *Fake) AfterFunc(d time.Duration, fn func()) Timer {
	w := &waiter{f: f, fn: fn}
	f.add(w, d)
	return w
}

// WithTimeout returns a context that ends with context.DeadlineExceeded once
// Advance has moved the clock by d, or earlier when ctx ends.
func (f *Fake) WithTimeout(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	inner, cancel := context.WithCancelCause(ctx)
	t := f.AfterFunc(d, func() { cancel(context.DeadlineExceeded) })
	tc := &timeoutCtx{Context: inner, deadline: f.Now().Add(d)}
	return tc, func() {
		t.Stop()
		cancel(context.Canceled)
	}
}

// timeoutCtx reports the fake deadline and, once it has passed, the error
// context.WithTimeout would report.
type timeoutCtx struct {
	context.Context
	deadline time.Time
}

func (c *timeoutCtx) Deadline() (time.Time, bool) { return c.deadline, true }

func (c *timeoutCtx) Err() error {
	err := c.Context.Err()
	if err != nil && errors.Is(context.Cause(c.Context), context.DeadlineExceeded) {
		return context.DeadlineExceeded
	}
	return err
}

// Advance moves the clock forward by d, firing every timer and sleeper due
// on the way, each with the clock set to its due time.
func (f *Fake) Advance(d time.Duration) {
	f.mu.Lock()
	target := f.now.Add(d)
	for {
		sort.SliceStable(f.waiters, func(i, j int) bool { return f.waiters[i].due.Before(f.waiters[j].due) })
		if len(f.waiters) == 0 || f.waiters[0].due.After(target) {
			break
		}
		w := f.waiters[0]
		f.waiters = f.waiters[1:]
		w.pending = false
		if w.due.After(f.now) {
			f.now = w.due
		}
		if w.fn != nil {
			go w.fn()
		} else {
			close(w.wake)
		}
	}
	f.now = target
	f.cond.Broadcast()
	f.mu.Unlock()
}

// BlockUntilSleepers waits, in real time and for at most limit, until at
// least n goroutines are blocked in Sleep, and returns the remaining
// duration of each, soonest first. It fails when limit passes first.
func (f *Fake) BlockUntilSleepers(n int, limit time.Duration) ([]time.Duration, error) {
	return f.blockUntil(n, limit, func(w *waiter) bool { return w.wake != nil })
}

// BlockUntilWaiters is BlockUntilSleepers counting every pending timer
// too: AfterFunc calls and WithTimeout deadlines as well as sleepers. Tests
// use it to step through code that waits on a deadline rather than in
// Sleep.
func (f *Fake) BlockUntilWaiters(n int, limit time.Duration) ([]time.Duration, error) {
	return f.blockUntil(n, limit, func(*waiter) bool { return true })
}

func (f *Fake) blockUntil(n int, limit time.Duration, counts func(*waiter) bool) ([]time.Duration, error) {
	// The deadline is read before the wake-up is armed, so that the wake-up
	// never comes before it and leaves the loop below waiting for good.
	deadline := time.Now().Add(limit)
	stop := time.AfterFunc(limit, func() {
		f.mu.Lock()
		f.cond.Broadcast()
		f.mu.Unlock()
	})
	defer stop.Stop()
	f.mu.Lock()
	defer f.mu.Unlock()
	for {
		var ds []time.Duration
		for _, w := range f.waiters {
			if counts(w) {
				ds = append(ds, w.due.Sub(f.now))
			}
		}
		if len(ds) >= n {
			sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
			return ds, nil
		}
		if !time.Now().Before(deadline) {
			return ds, errors.New("clock: timed out waiting for sleepers")
		}
		f.cond.Wait()
	}
}

// Pending returns how many timers and sleepers have not fired yet.
func (f *Fake) Pending() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.waiters)
}

func (f *Fake) add(w *waiter, d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.schedule(w, d)
}

// schedule (re)inserts w to fire d after now; f.mu must be held.
func (f *Fake) schedule(w *waiter, d time.Duration) {
	w.due = f.now.Add(d)
	if d <= 0 && w.fn != nil {
		go w.fn()
		return
	}
	if d <= 0 {
		close(w.wake)
		return
	}
	w.pending = true
	f.waiters = append(f.waiters, w)
	f.cond.Broadcast()
}

// Stop removes the timer if it has not fired.
func (w *waiter) Stop() bool {
	f := w.f
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.remove(w)
}

// Reset reschedules the timer d after the current fake time.
func (w *waiter) Reset(d time.Duration) bool {
	f := w.f
	f.mu.Lock()
	defer f.mu.Unlock()
	was := f.remove(w)
	f.schedule(w, d)
	return was
}

func (f *Fake) remove(w *waiter) bool {
	if !w.pending {
		return false
	}
	for i, x := range f.waiters {
		if x == w {
			f.waiters = append(f.waiters[:i], f.waiters[i+1:]...)
			break
		}
	}
	w.pending = false
	f.cond.Broadcast()
	return true
}
