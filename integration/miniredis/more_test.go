package miniredis_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goredlock/goredlock/redlock"
)

// TestInspect: Inspect reads a held lock, its fence and its waiter, a
// semaphore's permits and an election's leader on miniredis.
func TestInspect(t *testing.T) {
	mrs := start(t, 3)
	c := clientOn(t, mrs, redlock.WithFencing())
	l, err := c.Acquire(bg, "job", 20*time.Second)
	require.NoError(t, err)
	st, err := c.Inspect(bg, "job")
	require.NoError(t, err)
	for i, s := range st.Servers {
		require.NoError(t, s.Err, "server %d", i)
	}
	assert.True(t, st.Held)
	assert.Equal(t, l.Token()[17:25], st.Holder)
	assert.True(t, st.Left > 10*time.Second && st.Left <= 20*time.Second, "left %v", st.Left)
	assert.Equal(t, l.Fence(), st.Fence)

	other := clientOn(t, mrs, redlock.WithRetryCount(-1))
	wctx, stopWaiting := context.WithCancel(bg)
	waited := make(chan error, 1)
	go func() {
		_, err := other.Acquire(wctx, "job", 20*time.Second)
		waited <- err
	}()
	require.Eventually(t, func() bool {
		st, err := c.Inspect(bg, "job")
		return err == nil && st.Waiters == 1
	}, 10*time.Second, 20*time.Millisecond, "the waiter in line")
	select {
	case <-l.Contended():
	case <-time.After(10 * time.Second):
		t.Fatal("the holder was not told of the waiter (Contended)")
	}
	stopWaiting()
	require.ErrorIs(t, <-waited, context.Canceled)
	require.NoError(t, l.Release(bg))

	p, err := c.Semaphore("job", 3).Acquire(bg, 20*time.Second)
	require.NoError(t, err)
	lead, err := c.Election("job").Campaign(bg, 20*time.Second, "host-a")
	require.NoError(t, err)
	st, err = c.Inspect(bg, "job")
	require.NoError(t, err)
	assert.False(t, st.Held)
	assert.Equal(t, 1, st.Semaphore.InUse, "permits held")
	assert.Equal(t, 3, st.Semaphore.Permits)
	assert.Equal(t, "host-a", st.Election.Leader)
	require.NoError(t, p.Release(bg))
	require.NoError(t, lead.Release(bg))
}

// TestDoKeepsTheLockAlive: Do extends a lock while its function runs
// longer than its TTL. miniredis expires nothing by itself: the servers
// are fast-forwarded by a quarter of the TTL every third of one, a whole
// TTL in all, so that a lock that were not extended would be gone. The
// TTL is long enough for a keep-alive late by a second (a loaded machine
// under the race detector) not to lose the lock in real time.
func TestDoKeepsTheLockAlive(t *testing.T) {
	const ttl = 3 * time.Second
	mrs := start(t, 3)
	c := clientOn(t, mrs, steady)
	other := clientOn(t, mrs)
	require.NoError(t, c.Do(bg, "job", ttl, func(ctx context.Context) error {
		l, _ := redlock.LockFromContext(ctx)
		for range 4 {
			time.Sleep(ttl / 3)
			fastForward(mrs, ttl/4)
			require.NoError(t, l.Err())
			_, err := other.TryAcquire(bg, "job", 10*time.Second)
			require.ErrorIs(t, err, redlock.ErrHeldElsewhere)
		}
		return ctx.Err()
	}))
}

// TestLockDelay: a lock that expired without a release stays ungranted
// for its lock-delay (on the servers' TTL clock, fast-forwarded here: the
// key lives for the TTL plus the delay).
func TestLockDelay(t *testing.T) {
	mrs := start(t, 3)
	c := clientOn(t, mrs, steady)
	_, err := c.Acquire(bg, "job", time.Second, redlock.WithLockDelay(10*time.Second))
	require.NoError(t, err)
	require.Eventually(t, func() bool { return holding(mrs, "job", "") == 0 }, 5*time.Second, time.Millisecond, "the key on every server")
	fastForward(mrs, 2*time.Second) // the lock's TTL ran out, not its delay
	_, err = c.TryAcquire(bg, "job", time.Second)
	require.ErrorIs(t, err, redlock.ErrHeldElsewhere, "within the lock-delay")
	fastForward(mrs, 10*time.Second)
	l2, err := c.TryAcquire(bg, "job", time.Second)
	require.NoError(t, err, "after the lock-delay")
	require.NoError(t, l2.Release(bg))
}
