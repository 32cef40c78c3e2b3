// Package clock lets the lock code read time and wait through an interface,
// so that tests can drive drift, validity, expiry and retry delays with a
// fake clock instead of sleeping.
package clock

import (
	"context"
	"reflect"
	"time"
)

// Clock is the time source of the client, its locks and the in-memory key
// server.
type Clock interface {
	// Now returns the current time; the real clock's reading carries a
	// monotonic component, so durations between readings ignore wall-clock
	// jumps.
	Now() time.Time
	// Since returns the time elapsed since t.
	Since(t time.Time) time.Duration
	// Sleep waits for d or until ctx ends, whichever is first, and returns
	// ctx's error in the second case.
	Sleep(ctx context.Context, d time.Duration) error
	// SleepOrWake is Sleep that also returns, with a nil error, as soon as
	// one of wake is closed.
	SleepOrWake(ctx context.Context, d time.Duration, wake []<-chan struct{}) error
	// AfterFunc calls f in its own goroutine once d has elapsed.
	AfterFunc(d time.Duration, f func()) Timer
	// WithTimeout is context.WithTimeout measured on this clock.
	WithTimeout(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc)
}

// Timer is a pending call made by AfterFunc.
type Timer interface {
	// Stop prevents the call if it has not happened yet and reports
	// whether it did so.
	Stop() bool
	// Reset makes the call happen after d (again, if it already happened)
	// and reports whether it was still pending.
	Reset(d time.Duration) bool
}

// Real is the Clock of the running process.
type Real struct{}

var _ Clock = Real{}

// Now returns time.Now().
func (Real) Now() time.Time { return time.Now() }

// Since returns time.Since(t).
func (Real) Since(t time.Time) time.Duration { return time.Since(t) }

// Sleep waits on a time.Timer, stopping it early when ctx ends.
func (Real) Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// SleepOrWake waits on a time.Timer, ctx and the wake channels at once.
func (Real) SleepOrWake(ctx context.Context, d time.Duration, wake []<-chan struct{}) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	return selectWake(ctx, t.C, wake)
}

// selectWake waits until ctx ends (its error), timeUp delivers or one of
// wake is closed (nil). The first few wake channels are selected on
// directly; more, which a client of over three notifying servers has, go
// through reflect.Select.
func selectWake[T any](ctx context.Context, timeUp <-chan T, wake []<-chan struct{}) error {
	var w [3]<-chan struct{} // nil channels never fire
	if len(wake) <= len(w) {
		copy(w[:], wake)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-timeUp:
		case <-w[0]:
		case <-w[1]:
		case <-w[2]:
		}
		return nil
	}
	cases := make([]reflect.SelectCase, 0, 2+len(wake))
	cases = append(cases,
		reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(ctx.Done())},
		reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(timeUp)})
	for _, ch := range wake {
		cases = append(cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(ch)})
	}
	if chosen, _, _ := reflect.Select(cases); chosen == 0 {
		return ctx.Err()
	}
	return nil
}

// AfterFunc returns time.AfterFunc(d, f).
func (Real) AfterFunc(d time.Duration, f func()) Timer { return time.AfterFunc(d, f) }

// WithTimeout returns a context that ends as context.WithTimeout(ctx, d)'s
// would, but arms its timer only once something waits on its Done: the
// client bounds every server call this way, and most are answered before
// anyone waits (see lazyDeadline).
func (Real) WithTimeout(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	return withLazyDeadline(ctx, time.Now().Add(d))
}

// epoch anchors MonoNow: the one reading of the wall clock it makes.
var epoch = time.Now()

// MonoNow is time.Now as the monotonic clock moves, at about half its
// cost: time.Now reads the wall clock too, which on some virtual machines
// makes each reading cost 60-100 ns. Times that are only compared with
// other readings of it and measured from now, which the monotonic clock
// does, can take it (the in-memory server's TTLs, a connection's write
// deadline); the wall clock they carry is the epoch's, moved on by the
// monotonic clock, and may differ from time.Now's by whatever the wall
// clock was set by since. Times that meet a caller's (a context's
// deadline, which may carry no monotonic reading) or that a user sees
// (Lock.Until) read time.Now.
func MonoNow() time.Time { return epoch.Add(time.Since(epoch)) }
