package chaos

import (
	"context"
	"time"

	"github.com/goredlock/goredlock/redlock"
)

// The functions in this file are where the suite meets parts of the
// redlock API that do not exist yet. Each says what to write once they
// do; nothing else in the package needs to change.

// closeClient waits for everything the client left running (fan-out
// stragglers, clean-ups of failed attempts) before its key servers are
// closed and the leak checks run.
//
// SEAM(issue 7, Client.Close): return c.Close(). Until then the clients
// have no Close: the key servers' Close waits for the calls in flight, and
// the goroutine check waits for the stragglers to end on their own.
func closeClient(*redlock.Client) error {
	return nil
}

// clientOptions are given to every client of the suite after its retry
// settings.
//
// SEAM(issue 7, WithLossMargin): nothing is needed for the default
// margin; to test another, add redlock.WithLossMargin(m) here and return
// m from lossMargin. SEAM(fencing): add redlock.WithFencing() once the
// Redis key server is a keyserver.Fencer.
func clientOptions() []redlock.Option { return nil }

// lossMargin is the loss margin in force for a lock of ttl taken by the
// suite's clients: its holder must hear of a loss by Until − margin. The
// checker reads it from each grant.
//
// SEAM(issue 7, WithLossMargin): the default is two server timeouts, and
// the suite leaves the server timeout at its default of 5% of the TTL:
// return 2 * max(ttl/20, time.Millisecond). Today a lock is declared lost
// at Until at the latest, a margin of 0.
func lossMargin(time.Duration) time.Duration {
	return 0
}

// lockInDo returns the lock that Do or DoOrSkip holds while fn runs, from
// fn's context, so that a Do grant is recorded with its token, Until and
// fence. Without it, a Do grant's Until is not known: the checker ends its
// hold when fn returns or hears of the loss, and cannot time the loss.
//
// SEAM(issue 7, LockFromContext): return redlock.LockFromContext(ctx).
func lockInDo(context.Context) (*redlock.Lock, bool) {
	return nil, false
}

// fenceOf returns the lock's fencing token, 0 when it carries none.
//
// SEAM(fencing, Lock.Fence): return l.Fence().
func fenceOf(*redlock.Lock) uint64 {
	return 0
}
