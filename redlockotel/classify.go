package redlockotel

import (
	"context"
	"errors"

	"github.com/goredlock/goredlock/keyserver"
	"github.com/goredlock/goredlock/redlock"
)

// The values of redlock.acquire.outcome.
const (
	outcomeAcquired      = "acquired"
	outcomeHeldElsewhere = "held_elsewhere"
	outcomeUnavailable   = "unavailable"
	outcomeCancelled     = "cancelled"
	outcomeError         = "error"
)

// acquireOutcome says how an acquisition under ctx ended. The context
// comes first: a caller that gave up waiting for a held lock cancelled
// it, whatever the last votes were. It is the caller's context that
// decides, not errors.Is(err, context.DeadlineExceeded) alone, which
// before goredlock's QuorumError matched the caller's context only also
// matched a key server's own timeout carried in err.
func acquireOutcome(ctx context.Context, err error) string {
	switch {
	case err == nil:
		return outcomeAcquired
	case ctx.Err() != nil && errors.Is(err, ctx.Err()):
		return outcomeCancelled
	case errors.Is(err, redlock.ErrHeldElsewhere):
		return outcomeHeldElsewhere
	case errors.Is(err, redlock.ErrNotAcquired):
		return outcomeUnavailable
	}
	return outcomeError
}

// lostBeforeRelease reports whether a release's error says the lock had
// been declared lost already, in which case the Lost hook has recorded
// its hold.
func lostBeforeRelease(err error) bool { return errors.Is(err, redlock.ErrLockLost) }

// errorType classifies a lock operation's error for error.type, by the
// redlock error it matches first.
func errorType(err error) string {
	for _, e := range []struct {
		err  error
		name string
	}{
		{redlock.ErrLockLost, "redlock.ErrLockLost"},
		{redlock.ErrHeldElsewhere, "redlock.ErrHeldElsewhere"},
		{redlock.ErrNotAcquired, "redlock.ErrNotAcquired"},
		{redlock.ErrNotHeld, "redlock.ErrNotHeld"},
		{redlock.ErrClosed, "redlock.ErrClosed"},
		{redlock.ErrInvalidArgument, "redlock.ErrInvalidArgument"},
		{context.DeadlineExceeded, "context.DeadlineExceeded"},
		{context.Canceled, "context.Canceled"},
	} {
		if errors.Is(err, e.err) {
			return e.name
		}
	}
	return "_OTHER"
}

// serverErrorType classifies a key server's failure for error.type.
func serverErrorType(err error) string {
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return "context.DeadlineExceeded"
	case errors.Is(err, context.Canceled):
		return "context.Canceled"
	case errors.Is(err, keyserver.ErrPermanent):
		return "keyserver.ErrPermanent"
	case errors.Is(err, keyserver.ErrInvalidArgument):
		return "keyserver.ErrInvalidArgument"
	}
	return "_OTHER"
}
