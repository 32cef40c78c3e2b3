package redlock

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goredlock/goredlock/internal/clock"
	"github.com/goredlock/goredlock/keyserver"
)

// notAWatcher is a key server that cannot tell its holders of waiters: it
// keeps no line.
type notAWatcher struct{ keyserver.KeyServer }

// cannotTell is a key server that keeps lines but cannot tell their
// holders of waiters: its WatchContention fails with err.
type cannotTell struct {
	keyserver.Notifier
	err error
}

func (c cannotTell) WatchContention(context.Context, string, string) (_, _ <-chan struct{}, _ func(), _ error) {
	return nil, nil, nil, c.err
}

// waitFor waits, on real time, until ch is closed, or fails t.
func waitFor(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(wait):
		t.Fatalf("%s: not within %v", what, wait)
	}
}

// quiet fails t if ch is closed.
func quiet(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
		t.Fatalf("%s: closed", what)
	default:
	}
}

// waiter starts an Acquire of name that waits in line until ctx ends,
// and returns its result.
func waiter(t *testing.T, c *Client, ctx context.Context, name string) func() lockResult {
	return async(t, func() lockResult {
		l, err := c.Acquire(ctx, name, 10*time.Second, WithRetryCount(-1))
		return lockResult{l, err}
	})
}

func TestContendedClosesWhenAWaiterJoins(t *testing.T) {
	var hooked atomic.Int32
	c, fc := memoryClient(t, WithHooks(Hooks{Contended: func(_ context.Context, name string) {
		assert.Equal(t, "job", name)
		hooked.Add(1)
	}}))
	l, err := c.Acquire(bg, "job", 10*time.Second)
	require.NoError(t, err)
	ch := l.Contended()
	assert.Equal(t, ch, l.Contended(), "one channel per lock")
	other, err := c.Acquire(bg, "other", 10*time.Second)
	require.NoError(t, err)
	quiet(t, ch, "Contended with nobody waiting")

	ctx, cancel := context.WithCancel(bg)
	defer cancel()
	got := waiter(t, c, ctx, "job")
	waitFor(t, ch, "Contended once a waiter of another call is in line")
	assert.Equal(t, int32(1), hooked.Load(), "Hooks.Contended, once")
	assert.NoError(t, l.Err(), "advice, not revocation: still held")
	quiet(t, other.Contended(), "another lock's Contended")

	require.NoError(t, l.Release(bg))
	r := got()
	require.NoError(t, r.err, "the waiter gets the lock")
	require.NoError(t, r.lock.Release(bg))
	require.NoError(t, other.Release(bg))
	_ = fc
}

func TestContendedSeesAWaiterAlreadyInLine(t *testing.T) {
	c, _ := memoryClient(t)
	l, err := c.Acquire(bg, "job", 10*time.Second)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(bg)
	got := waiter(t, c, ctx, "job")
	for i, s := range c.servers { // the waiter is in every line
		contended, _, stop, err := s.(keyserver.Notifier).WatchContention(bg, l.key, l.token)
		require.NoError(t, err)
		waitFor(t, contended, "the waiter in server "+string(rune('0'+i))+"'s line")
		stop()
	}
	waitFor(t, l.Contended(), "Contended of a lock whose line already holds a waiter")
	cancel()
	assert.ErrorIs(t, got().err, context.Canceled)
	require.NoError(t, l.Release(bg))
}

// TestContendedNeedsAQuorumOfWatchers: servers that cannot tell, keeping
// no line or answering errors.ErrUnsupported or keyserver.ErrPermanent,
// count as telling, but one must tell.
func TestContendedNeedsAQuorumOfWatchers(t *testing.T) {
	for name, cannot := range map[string]func(keyserver.KeyServer) keyserver.KeyServer{
		"no line": func(s keyserver.KeyServer) keyserver.KeyServer { return notAWatcher{s} },
		"unsupported": func(s keyserver.KeyServer) keyserver.KeyServer {
			return cannotTell{s.(keyserver.Notifier), fmt.Errorf("no contention here: %w", errors.ErrUnsupported)}
		},
		// Failing for good, as for a user denied SUBSCRIBE. Retried, as
		// before, it would sleep the retry delay on the fake clock for
		// ever, and Contended would not close.
		"denied": func(s keyserver.KeyServer) keyserver.KeyServer {
			return cannotTell{s.(keyserver.Notifier), fmt.Errorf("%w: NOPERM no permissions to run the 'subscribe' command", keyserver.ErrPermanent)}
		},
	} {
		t.Run(name, func(t *testing.T) {
			fc := clock.NewFake(t0)
			servers := memoryServers(t, fc, 3)
			// Two servers that cannot tell: one of three must, and can.
			c := testClient(t, fc, []keyserver.KeyServer{servers[0], cannot(servers[1]), cannot(servers[2])})
			l, err := c.Acquire(bg, "job", 10*time.Second)
			require.NoError(t, err)
			ctx, cancel := context.WithCancel(bg)
			got := waiter(t, c, ctx, "job")
			waitFor(t, l.Contended(), "Contended told by the one server that can")
			cancel()
			assert.ErrorIs(t, got().err, context.Canceled)
			require.NoError(t, l.Release(bg))

			// None can tell: it never closes, and nothing is left running.
			c = testClient(t, fc, []keyserver.KeyServer{cannot(servers[0]), cannot(servers[1]), cannot(servers[2])})
			l, err = c.Acquire(bg, "none", 10*time.Second)
			require.NoError(t, err)
			quiet(t, l.Contended(), "Contended with no server that can tell")
			require.NoError(t, l.Release(bg))
		})
	}
}

func TestContendedOfAnEndedLockStaysOpen(t *testing.T) {
	c, _ := memoryClient(t)
	l, err := c.Acquire(bg, "job", 10*time.Second)
	require.NoError(t, err)
	require.NoError(t, l.Release(bg))
	quiet(t, l.Contended(), "Contended of a released lock")
	var nilLock *Lock
	quiet(t, nilLock.Contended(), "Contended of a nil lock")
}
