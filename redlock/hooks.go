package redlock

import (
	"context"
	"time"
)

// Hooks let a program watch its locks, for metrics and traces (package
// redlockotel turns them into OpenTelemetry). Every field is optional. The
// hooks run on the goroutine of the event they report, so they must be
// safe for concurrent use, return quickly, and not call the client.
type Hooks struct {
	// Start is called when a call begins (op is "acquire", "try_acquire",
	// "do", "do_or_skip", ...), and End when it returns. The call, and its
	// other hooks, carry on with the context Start returns.
	Start func(ctx context.Context, op, name string) context.Context
	End   func(ctx context.Context, op, name string, err error)

	// Attempt reports each attempt's votes when its outcome was decided.
	Attempt func(ctx context.Context, a Attempt)
	// Acquired reports how an acquisition ended, granted or not.
	Acquired func(ctx context.Context, a Acquisition)
	// Extended reports each Extend, err nil when granted.
	Extended func(ctx context.Context, name string, err error)
	// Lost reports a lock declared lost before it was released, and how
	// long it had been held. It may run on the client's timer, with the
	// acquiring call's context, without its cancellation.
	Lost func(ctx context.Context, name string, held time.Duration)
	// AtRisk reports a held lock entering the at-risk state (see Health),
	// with the validity it had left; like Lost, it may run on the
	// client's timer, with the acquiring call's context.
	AtRisk func(ctx context.Context, name string, left time.Duration)
	// Contended reports, once per lock and only for a lock whose Contended
	// was called, that a waiter joined the line of a quorum of its servers
	// (see Lock.Contended); with the acquiring call's context.
	Contended func(ctx context.Context, name string)
	// Released reports each Release (and the end of Do), with how long the
	// lock was held; err as Release returns it, which matches ErrLockLost
	// when the lock had been lost before.
	Released func(ctx context.Context, name string, held time.Duration, err error)
	// ServerFailed reports every failed call to a server; server is its
	// index in New's slice, op the call: "acquire", "extend", "release"
	// (clean-ups too), "raise_fence", "read_fence", "leave_line" or
	// "identify" (keyserver.Incarnator's read before a server's first vote).
	ServerFailed func(ctx context.Context, op, name string, server int, err error)
	// Degraded reports, once per server and feature, that a server serves
	// a feature worse than it could, for good: feature "watch" when it
	// refused a waiter's watch (an ACL without Pub/Sub), after which the
	// client's waiters poll it at the retry delay. err is the refusal.
	Degraded func(ctx context.Context, server int, feature string, err error)
}

// Attempt is one acquisition attempt, as the votes stood when its outcome
// was decided.
type Attempt struct {
	Name   string // the name given to the call
	Number int    // 1 for the first attempt of a call
	// Servers asked, and those that granted, refused (another token holds
	// the name) and failed, when the outcome was decided.
	Servers, Granted, Refused, Failed int
	Duration                          time.Duration // from the attempt's first server call to its verdict
	OK                                bool          // the attempt was granted the lock
	// Ahead is the most waiters a refusal said were ahead of the call in
	// a server's line: a sample of the name's queue.
	Ahead int
}

// Acquisition is how an Acquire, TryAcquire, Do or DoOrSkip call's attempt
// to take its lock ended.
type Acquisition struct {
	Name     string        // the name given to the call
	Attempts int           // attempts made, 0 when none reached the servers
	Duration time.Duration // from the call's start to the grant or the failure
	// Err is nil when the lock was granted; otherwise errors.Is tells
	// ErrHeldElsewhere, the context's error, or servers unavailable.
	Err error
}

// WithHooks has the client report its locks' events to h. It is a
// ClientOption, for New only.
func WithHooks(h Hooks) ClientOption {
	return clientOnly(func(o *options) { o.hooks = h })
}
