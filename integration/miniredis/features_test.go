package miniredis_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goredlock/goredlock/redlock"
)

func TestTryAcquireRefusedWhileHeldElsewhere(t *testing.T) {
	mrs := start(t, 3)
	a := clientOn(t, mrs)
	b := clientOn(t, mrs)
	l, err := a.Acquire(bg, "job", 10*time.Second)
	require.NoError(t, err)
	_, err = b.TryAcquire(bg, "job", 10*time.Second)
	require.ErrorIs(t, err, redlock.ErrHeldElsewhere)
	ran, err := b.DoOrSkip(bg, "job", 10*time.Second, func(context.Context) error { return nil })
	require.NoError(t, err)
	assert.False(t, ran, "DoOrSkip ran while the lock was held elsewhere")
	require.NoError(t, l.Release(bg))
	eventuallyAll(t, mrs, "job", "", "after Release")
	l2, err := b.TryAcquire(bg, "job", 10*time.Second)
	require.NoError(t, err)
	require.NoError(t, l2.Release(bg))
}

func TestDo(t *testing.T) {
	mrs := start(t, 3)
	c := clientOn(t, mrs)
	ran := false
	require.NoError(t, c.Do(bg, "job", 10*time.Second, func(ctx context.Context) error {
		l, ok := redlock.LockFromContext(ctx)
		require.True(t, ok)
		assert.GreaterOrEqual(t, holding(mrs, "job", l.Token()), 2)
		ran = true
		return nil
	}))
	assert.True(t, ran)
	eventuallyAll(t, mrs, "job", "", "after Do")
}

// miniredis expires a key only when fast-forwarded: a lock left unreleased
// is free for another client once every server moved past its TTL.
func TestUnreleasedLockExpiresOnFastForward(t *testing.T) {
	mrs := start(t, 3)
	a := clientOn(t, mrs)
	b := clientOn(t, mrs)
	l, err := a.Acquire(bg, "job", 5*time.Second)
	require.NoError(t, err)
	eventuallyAll(t, mrs, "job", l.Token(), "after Acquire")
	_, err = b.TryAcquire(bg, "job", 5*time.Second)
	require.ErrorIs(t, err, redlock.ErrHeldElsewhere)
	fastForward(mrs, 6*time.Second)
	l2, err := b.TryAcquire(bg, "job", 5*time.Second)
	require.NoError(t, err, "after every server moved past the first lock's TTL")
	require.NoError(t, l2.Release(bg))
}

func TestFencedLock(t *testing.T) {
	mrs := start(t, 3)
	c := clientOn(t, mrs, redlock.WithFencing())
	l1, err := c.Acquire(bg, "job", 10*time.Second)
	require.NoError(t, err)
	f1 := l1.Fence()
	require.NotZero(t, f1)
	current, err := c.CheckFence(bg, "job", f1)
	require.NoError(t, err)
	assert.True(t, current, "the holder's fence is the newest")
	require.NoError(t, l1.Release(bg))
	eventuallyAll(t, mrs, "job", "", "after Release")
	l2, err := c.Acquire(bg, "job", 10*time.Second)
	require.NoError(t, err)
	assert.Greater(t, l2.Fence(), f1, "a later grant's fence")
	current, err = c.CheckFence(bg, "job", f1)
	require.NoError(t, err)
	assert.False(t, current, "the first holder's fence after a later grant")
	require.NoError(t, l2.Release(bg))
}

func TestAcquireAll(t *testing.T) {
	mrs := start(t, 3)
	a := clientOn(t, mrs)
	b := clientOn(t, mrs)
	l, err := a.AcquireAll(bg, []string{"x", "y"}, 10*time.Second)
	require.NoError(t, err)
	assert.Equal(t, []string{"x", "y"}, l.Names())
	_, err = b.TryAcquire(bg, "y", 10*time.Second)
	require.ErrorIs(t, err, redlock.ErrHeldElsewhere, "a name of the set, alone")
	_, err = b.TryAcquireAll(bg, []string{"y", "z"}, 10*time.Second)
	require.ErrorIs(t, err, redlock.ErrHeldElsewhere, "a set that shares a name")
	require.NoError(t, l.Release(bg))
	eventuallyAll(t, mrs, "x", "", "after Release")
	eventuallyAll(t, mrs, "y", "", "after Release")
	l2, err := b.TryAcquireAll(bg, []string{"y", "z"}, 10*time.Second)
	require.NoError(t, err)
	require.NoError(t, l2.Release(bg))
}

func TestSemaphore(t *testing.T) {
	mrs := start(t, 3)
	a := clientOn(t, mrs)
	b := clientOn(t, mrs)
	p1, err := a.Semaphore("encoder", 2).Acquire(bg, 10*time.Second)
	require.NoError(t, err)
	p2, err := b.Semaphore("encoder", 2).Acquire(bg, 10*time.Second)
	require.NoError(t, err)
	_, err = b.Semaphore("encoder", 2).TryAcquire(bg, 10*time.Second)
	require.ErrorIs(t, err, redlock.ErrHeldElsewhere, "a third permit of two")
	require.NoError(t, p1.Extend(bg, 20*time.Second))
	require.NoError(t, p1.Release(bg))
	p3, err := b.Semaphore("encoder", 2).TryAcquire(bg, 10*time.Second)
	require.NoError(t, err, "a permit after one was released")
	require.NoError(t, p2.Release(bg))
	require.NoError(t, p3.Release(bg))
}

func TestRWMutex(t *testing.T) {
	mrs := start(t, 3)
	a := clientOn(t, mrs)
	b := clientOn(t, mrs)
	r1, err := a.RWMutex("catalog").RLock(bg, 10*time.Second)
	require.NoError(t, err)
	r2, err := b.RWMutex("catalog").TryRLock(bg, 10*time.Second)
	require.NoError(t, err, "a second reader")
	_, err = b.RWMutex("catalog").TryLock(bg, 10*time.Second)
	require.ErrorIs(t, err, redlock.ErrHeldElsewhere, "a writer while two read")
	require.NoError(t, r1.Release(bg))
	require.NoError(t, r2.Release(bg))
	w, err := b.RWMutex("catalog").TryLock(bg, 10*time.Second)
	require.NoError(t, err, "a writer once the readers left")
	_, err = a.RWMutex("catalog").TryRLock(bg, 10*time.Second)
	require.ErrorIs(t, err, redlock.ErrHeldElsewhere, "a reader while one writes")
	require.NoError(t, w.Release(bg))
}

func TestElection(t *testing.T) {
	mrs := start(t, 3)
	a := clientOn(t, mrs)
	b := clientOn(t, mrs)
	_, err := a.Election("scheduler").Leader(bg)
	require.ErrorIs(t, err, redlock.ErrNoLeader)
	lead, err := a.Election("scheduler").Campaign(bg, 10*time.Second, "host-a")
	require.NoError(t, err)
	assert.NotZero(t, lead.Fence(), "the term")
	leader, err := b.Election("scheduler").Leader(bg)
	require.NoError(t, err)
	assert.Equal(t, "host-a", leader)
	_, err = b.Election("scheduler").Campaign(bg, 10*time.Second, "host-b", redlock.WithRetryCount(0))
	require.ErrorIs(t, err, redlock.ErrHeldElsewhere, "a second candidate while host-a leads")
	require.NoError(t, lead.Release(bg))
	lead2, err := b.Election("scheduler").Campaign(bg, 10*time.Second, "host-b", redlock.WithRetryCount(0))
	require.NoError(t, err)
	assert.Greater(t, lead2.Fence(), lead.Fence(), "the next term")
	require.NoError(t, lead2.Release(bg))
}
