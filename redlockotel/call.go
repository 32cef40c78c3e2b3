package redlockotel

import (
	"context"
	"sync/atomic"

	"go.opentelemetry.io/otel/trace"
)

// call is one Acquire, TryAcquire, Do or DoOrSkip in progress, carried by
// the context that the Start hook returns. The core's other hooks receive
// that context, or one made from it, but not the operation: the call tells
// them which span is the call's and which operation to put on the acquire
// metrics.
type call struct {
	op, name string
	names    int // the names of a set's operation (see setNames); 0 for one lock's
	span     trace.Span
	lostSeen atomic.Bool // a redlock.lock.lost event was added
}

type callKey struct{}

// withCall returns ctx carrying c.
func withCall(ctx context.Context, c *call) context.Context {
	return context.WithValue(ctx, callKey{}, c)
}

// callFor returns the call that ctx carries if it is about the lock
// called name, or nil. A lock acquired inside Do's function, with the
// function's context, is released with that context too: its events
// belong to its own call's span, which has ended, not to Do's.
func callFor(ctx context.Context, name string) *call {
	c, _ := ctx.Value(callKey{}).(*call)
	if c == nil || c.name != name {
		return nil
	}
	return c
}

// markLost reports whether the loss of the call's lock is news: the first
// time only, so that a loss found by an extension and seen again at the
// release is one event.
func (c *call) markLost() bool { return c.lostSeen.CompareAndSwap(false, true) }
