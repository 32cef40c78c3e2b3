package gocronlock_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goredlock/goredlock/integration/gocronlock"
	"github.com/goredlock/goredlock/redlock"
)

func TestNewRejectsBadArguments(t *testing.T) {
	c := newClient(t, memoryServers(t))
	for name, tc := range map[string]struct {
		c    *redlock.Client
		opts []gocronlock.Option
	}{
		"nil client":        {nil, nil},
		"zero TTL":          {c, []gocronlock.Option{gocronlock.WithTTL(0)}},
		"negative TTL":      {c, []gocronlock.Option{gocronlock.WithTTL(-time.Second)}},
		"negative min hold": {c, []gocronlock.Option{gocronlock.WithMinHold(-time.Millisecond)}},
	} {
		t.Run(name, func(t *testing.T) {
			k, err := gocronlock.New(tc.c, tc.opts...)
			require.ErrorIs(t, err, redlock.ErrInvalidArgument)
			assert.Nil(t, k)
		})
	}
}

func TestLockHeldElsewhereIsASkip(t *testing.T) {
	servers := memoryServers(t)
	a := newLocker(t, newClient(t, servers), gocronlock.WithMinHold(0))
	b := newLocker(t, newClient(t, servers), gocronlock.WithMinHold(0))

	la, err := a.Lock(bg, "report")
	require.NoError(t, err)
	_, err = b.Lock(bg, "report")
	require.ErrorIs(t, err, redlock.ErrHeldElsewhere)
	require.ErrorIs(t, err, redlock.ErrNotAcquired)
	assert.Contains(t, err.Error(), `"report"`)

	lb, err := b.Lock(bg, "other")
	require.NoError(t, err, "another job's lock is free")
	require.NoError(t, lb.Unlock(bg))

	require.NoError(t, la.Unlock(bg))
	lb, err = b.Lock(bg, "report")
	require.NoError(t, err, "without a minimum hold, Unlock frees the lock at once")
	require.NoError(t, lb.Unlock(bg))
}

func TestUnlockKeepsTheMinimumHold(t *testing.T) {
	servers := memoryServers(t)
	const hold = 400 * time.Millisecond
	a := newLocker(t, newClient(t, servers), gocronlock.WithMinHold(hold))
	b := newClient(t, servers)

	start := time.Now()
	la, err := a.Lock(bg, "report")
	require.NoError(t, err)
	require.NoError(t, la.Unlock(bg))
	assert.Less(t, time.Since(start), hold/2, "Unlock does not wait for the hold to end")

	// The lock is still held until the hold ends, then free: ask with a
	// plain client under the Locker's name.
	_, err = b.TryAcquire(bg, "gocron:report", time.Second)
	require.ErrorIs(t, err, redlock.ErrHeldElsewhere, "within the minimum hold")
	time.Sleep(time.Until(start.Add(hold + 50*time.Millisecond)))
	l, err := b.TryAcquire(bg, "gocron:report", time.Second)
	require.NoError(t, err, "after the minimum hold")
	require.NoError(t, l.Release(bg))
}

func TestJobLongerThanTheMinimumHoldIsReleasedAtUnlock(t *testing.T) {
	servers := memoryServers(t)
	a := newLocker(t, newClient(t, servers), gocronlock.WithMinHold(50*time.Millisecond))
	b := newClient(t, servers)

	la, err := a.Lock(bg, "report")
	require.NoError(t, err)
	time.Sleep(100 * time.Millisecond)
	require.NoError(t, la.Unlock(bg))
	l, err := b.TryAcquire(bg, "gocron:report", time.Second)
	require.NoError(t, err, "the hold had passed: Unlock deleted the keys")
	require.NoError(t, l.Release(bg))
}

func TestKeyPrefix(t *testing.T) {
	servers := memoryServers(t)
	c := newClient(t, servers)
	for _, prefix := range []string{"jobs/", ""} {
		k := newLocker(t, c, gocronlock.WithKeyPrefix(prefix), gocronlock.WithMinHold(0))
		l, err := k.Lock(bg, "report")
		require.NoError(t, err)
		_, err = c.TryAcquire(bg, prefix+"report", time.Second)
		require.ErrorIs(t, err, redlock.ErrHeldElsewhere, "prefix %q", prefix)
		require.NoError(t, l.Unlock(bg))
	}
}

func TestUnlockTwice(t *testing.T) {
	k := newLocker(t, newClient(t, memoryServers(t)))
	l, err := k.Lock(bg, "report")
	require.NoError(t, err)
	require.NoError(t, l.Unlock(bg))
	require.ErrorIs(t, l.Unlock(bg), redlock.ErrNotHeld)
}

func TestLockWithEndedContext(t *testing.T) {
	k := newLocker(t, newClient(t, memoryServers(t)))
	ctx, cancel := context.WithCancel(bg)
	cancel()
	_, err := k.Lock(ctx, "report")
	require.ErrorIs(t, err, context.Canceled)
	require.NotErrorIs(t, err, redlock.ErrHeldElsewhere)
}

// The job's context ends when a scheduler shuts down, but the job runs on
// until it returns: the lock must stay held and be released by Unlock.
func TestContextEndingDuringTheJob(t *testing.T) {
	servers := memoryServers(t)
	k := newLocker(t, newClient(t, servers), gocronlock.WithTTL(300*time.Millisecond), gocronlock.WithMinHold(0))
	other := newClient(t, servers)
	ctx, cancel := context.WithCancel(bg)
	l, err := k.Lock(ctx, "report")
	require.NoError(t, err)
	cancel()
	time.Sleep(500 * time.Millisecond) // longer than the TTL
	_, err = other.TryAcquire(bg, "gocron:report", time.Second)
	require.ErrorIs(t, err, redlock.ErrHeldElsewhere, "kept alive after the context ended")
	require.NoError(t, l.Unlock(ctx), "Unlock ignores its context's cancellation")
	ol, err := other.TryAcquire(bg, "gocron:report", time.Second)
	require.NoError(t, err)
	require.NoError(t, ol.Release(bg))
}

func TestLockOptionsAreUsed(t *testing.T) {
	// A keep-alive interval that cannot fit in the TTL is refused by the
	// client at Lock, which shows the options reach DoOrSkip.
	k := newLocker(t, newClient(t, memoryServers(t)), gocronlock.WithTTL(time.Second),
		gocronlock.WithLockOptions(redlock.WithKeepAliveInterval(time.Second)))
	_, err := k.Lock(bg, "report")
	require.ErrorIs(t, err, redlock.ErrInvalidArgument)
}
