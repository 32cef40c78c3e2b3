// Package clock lets the lock code read time and wait through an interface,
// so that tests can drive drift, validity, expiry and retry delays with a
// fake clock instead of sleeping.
package clock

import (
	"context"
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

// AfterFunc returns time.AfterFunc(d, f).
func (Real) AfterFunc(d time.Duration, f func()) Timer { return time.AfterFunc(d, f) }

// WithTimeout returns context.WithTimeout(ctx, d).
func (Real) WithTimeout(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, d)
}
