package redlock_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goredlock/goredlock/internal/redistest"
	"github.com/goredlock/goredlock/redlock"
)

// TestRedisLockDelay: a holder with a lock-delay that stops extending,
// its Client closed without a release or its servers' connections cut,
// leaves the name ungranted on a quorum until d after its expiry; a clean
// release leaves no delay. Bounds: the next grant comes no sooner than the
// holder's Until plus d (its keys were set before its validity began), and
// within a generous while after.
func TestRedisLockDelay(t *testing.T) {
	const ttl, d = 600 * time.Millisecond, 2 * time.Second
	ctx := context.Background()
	for _, stop := range []string{"client closed", "connections cut"} {
		t.Run(stop, func(t *testing.T) {
			cluster := redistest.Start(t, 3)
			servers := serversAt(t, cluster.URLs(""))
			holder, err := redlock.New(servers, redlock.WithLockDelay(d), redlock.WithRetryCount(0))
			require.NoError(t, err)
			t.Cleanup(func() { holder.Close() })
			other := clientOn(t, cluster, redlock.WithRetryCount(0))

			for _, c := range []*redlock.Client{holder, other} {
				warm, err := c.Acquire(ctx, "warm-up", 10*time.Second) // dials and identifies the servers
				require.NoError(t, err)
				require.NoError(t, warm.Release(ctx))
			}
			l := acquireShort(t, holder, ttl)
			kept := make(chan error, 1)
			go func() { kept <- l.KeepAlive(ctx) }()
			time.Sleep(ttl) // an extension or two
			switch stop {
			case "client closed":
				require.NoError(t, holder.Close())
			default:
				for _, s := range servers {
					require.NoError(t, s.(interface{ Close() error }).Close())
				}
			}
			until := l.Until() // no extension after this: the keys end no sooner than until + d
			select {
			case err := <-kept:
				assert.Error(t, err, "KeepAlive after the holder stopped")
			case <-time.After(10 * time.Second):
				t.Fatal("KeepAlive did not return")
			}

			// In the delay: the keys are there on a quorum (checked only
			// while well inside it, so that a stalled machine cannot fail
			// the test).
			for time.Now().Before(until) {
				time.Sleep(10 * time.Millisecond)
			}
			if time.Since(until) < d/2 {
				with := 0
				for _, n := range cluster.Nodes {
					if n.MustDo("EXISTS", "job") == int64(1) {
						with++
					}
				}
				assert.GreaterOrEqual(t, with, 2, "nodes with the lock key after its expiry")
				_, err := other.TryAcquire(ctx, "job", time.Second)
				assert.ErrorIs(t, err, redlock.ErrHeldElsewhere, "in the delay")
			}

			var granted time.Time
			deadline := until.Add(d + 10*time.Second)
			for {
				began := time.Now()
				l2, err := other.TryAcquire(ctx, "job", 10*time.Second)
				if err == nil {
					granted = began
					require.NoError(t, l2.Release(ctx))
					break
				}
				require.ErrorIs(t, err, redlock.ErrNotAcquired)
				require.True(t, time.Now().Before(deadline), "still not granted %v after the holder's expiry: %v", time.Since(until), err)
				time.Sleep(20 * time.Millisecond)
			}
			t.Logf("granted %v after the holder's Until (delay %v)", granted.Sub(until).Round(time.Millisecond), d)
			assert.False(t, granted.Before(until.Add(d)), "granted %v after the holder's Until; want no sooner than the delay %v", granted.Sub(until), d)
		})
	}

	t.Run("clean release", func(t *testing.T) {
		cluster := redistest.Start(t, 3)
		holder := clientOn(t, cluster, redlock.WithRetryCount(0))
		other := clientOn(t, cluster, redlock.WithRetryCount(0))
		const ttl = 10 * time.Second
		l, err := holder.Acquire(ctx, "job", ttl, redlock.WithLockDelay(d))
		require.NoError(t, err)
		with := 0 // the grant came from a quorum; the third may still be on its way
		for _, n := range cluster.Nodes {
			if ms, _ := n.MustDo("PTTL", "job").(int64); time.Duration(ms)*time.Millisecond > ttl {
				with++
			}
		}
		assert.GreaterOrEqual(t, with, 2, "nodes whose key lives past the TTL, for the TTL plus the delay")
		require.NoError(t, l.Release(ctx))
		for _, n := range cluster.Nodes {
			require.Eventually(t, func() bool { return n.MustDo("EXISTS", "job") == int64(0) },
				5*time.Second, 5*time.Millisecond, "a clean release deletes the key")
		}
		l2, err := other.TryAcquire(ctx, "job", 10*time.Second)
		require.NoError(t, err, "at once after a clean release")
		require.NoError(t, l2.Release(ctx))
	})
}

// acquireShort takes "job" for ttl, a few tries allowed: a short TTL bounds
// each server call tightly, which a busy machine may miss.
func acquireShort(t *testing.T, c *redlock.Client, ttl time.Duration) *redlock.Lock {
	t.Helper()
	var l *redlock.Lock
	var err error
	require.Eventually(t, func() bool {
		l, err = c.Acquire(context.Background(), "job", ttl)
		return err == nil
	}, 5*time.Second, 20*time.Millisecond, "a %v lock: %v", ttl, err)
	return l
}

// TestRedisLockDelayCommandsPerNode: a lock with a lock-delay costs what
// a lock without one does, 4 commands per node for an uncontended lock
// and unlock (SET NX, the release script, its GET and DEL), since its
// calls are the plain ones with the TTL plus the delay; and the key it
// holds lives that long.
func TestRedisLockDelayCommandsPerNode(t *testing.T) {
	const ttl, d = 10 * time.Second, 20 * time.Second
	ctx := context.Background()
	cluster := redistest.Start(t, 3)
	c := clientOn(t, cluster, redlock.WithLockDelay(d), redlock.WithRetryCount(0))
	warm, err := c.Acquire(ctx, "warm-up", ttl)
	require.NoError(t, err)
	require.NoError(t, warm.Release(ctx))
	// The warm-up's calls to a node slower than the quorum (a SET NX and a
	// release) have landed: they would otherwise be counted below.
	redlock.Settle(c)
	for _, n := range cluster.Nodes {
		n.MustDo("CONFIG", "RESETSTAT")
	}
	l, err := c.Acquire(ctx, "job", ttl)
	require.NoError(t, err)
	held := 0
	for _, n := range cluster.Nodes {
		if ms, _ := n.MustDo("PTTL", "job").(int64); time.Duration(ms)*time.Millisecond > ttl {
			held++
		}
	}
	assert.GreaterOrEqual(t, held, 2, "nodes whose key lives past the TTL %v (the TTL plus the delay %v)", ttl, d)
	require.NoError(t, l.Release(ctx))
	for i, n := range cluster.Nodes {
		var calls map[string]int
		require.Eventually(t, func() bool { // the release's last call may still be on its way
			var total int
			total, calls = commandsRun(n)
			return total >= 4 && calls["del"] >= 1
		}, 5*time.Second, 5*time.Millisecond, "node %d: %v", i, calls)
		total, calls := commandsRun(n)
		// PTTL is the test's own read.
		total -= calls["pttl"]
		delete(calls, "pttl")
		t.Logf("node %d: an uncontended lock with a lock-delay ran %d commands %v", i, total, calls)
		assert.Equal(t, 4, total, "node %d: an uncontended lock with a lock-delay, and its unlock, ran %v; want SET NX, the release script, GET and DEL", i, calls)
	}
}
