package chaos

import (
	"context"
	"time"

	"github.com/goredlock/goredlock/redlock"
)

// The functions in this file are where the suite meets the redlock API:
// what it calls, and what it assumes of the defaults.

// closeClient waits for everything the client left running (fan-out
// stragglers, clean-ups of failed attempts, the rest of releases) before
// its key servers are closed and the leak checks run.
func closeClient(c *redlock.Client) error { return c.Close() }

// clientOptions are given to client id of the suite after its retry
// settings: every other client takes fenced locks, so that fenced and
// unfenced holders share names and the checker sees the fenced grants'
// tokens in grant order.
func clientOptions(id int) []redlock.ClientOption {
	if id%2 == 1 {
		return []redlock.ClientOption{redlock.WithFencing()}
	}
	return nil
}

// setClientOptions are given to a client of the AcquireAll workload
// after clientOptions: every set client fences, even ones, so that each
// name's tokens (Lock.FenceOf) are checked in grant order.
func setClientOptions(id int) []redlock.ClientOption {
	if len(clientOptions(id)) > 0 {
		return nil // fenced already
	}
	return []redlock.ClientOption{redlock.WithFencing()}
}

// lockNames returns every name a lock holds: the names of a set
// (AcquireAll), or the one name of any other lock or hold.
func lockNames(l *redlock.Lock) []string { return l.Names() }

// fenceOfName returns the fencing token of one of the lock's names (0
// without fencing).
func fenceOfName(l *redlock.Lock, name string) uint64 { return l.FenceOf(name) }

// lossMargin is the loss margin in force for a lock of ttl taken by the
// suite's clients: its holder must hear of a loss by Until − margin. The
// checker reads it from each grant. The suite leaves the server timeout at
// its default of 5% of the TTL, and the margin at its default of two
// server timeouts.
func lossMargin(ttl time.Duration) time.Duration {
	return 2 * max(ttl/20, time.Millisecond)
}

// lockInDo returns the lock that Do or DoOrSkip holds while fn runs, from
// fn's context, so that a Do grant is recorded with its token, Until and
// fence.
func lockInDo(ctx context.Context) (*redlock.Lock, bool) { return redlock.LockFromContext(ctx) }

// fenceOf returns the lock's fencing token, 0 when it carries none.
func fenceOf(l *redlock.Lock) uint64 { return l.Fence() }
