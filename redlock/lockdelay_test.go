package redlock

import (
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goredlock/goredlock/internal/clock"
	"github.com/goredlock/goredlock/keyserver"
	"github.com/goredlock/goredlock/keyserver/static"
)

// plainServer is a key server with the KeyServer methods alone: no line,
// no fence, no started calls.
type plainServer struct{ keyserver.KeyServer }

func TestLockDelayIsBounded(t *testing.T) {
	fc := clock.NewFake(t0)
	servers := memoryServers(t, fc, 3)
	for _, d := range []time.Duration{-time.Millisecond, MaxLockDelay + time.Millisecond} {
		_, err := New(servers, WithLockDelay(d))
		require.ErrorIs(t, err, ErrInvalidArgument, "New with WithLockDelay(%v)", d)
		c := testClient(t, fc, servers)
		_, err = c.TryAcquire(bg, "job", 10*time.Second, WithLockDelay(d))
		require.ErrorIs(t, err, ErrInvalidArgument, "TryAcquire with WithLockDelay(%v)", d)
	}
	c := testClient(t, fc, servers, WithLockDelay(MaxLockDelay))
	l, err := c.TryAcquire(bg, "job", 10*time.Second)
	require.NoError(t, err)
	require.NoError(t, l.Release(bg))
}

// TestLockDelayOverPlainServers: the delay needs nothing of a server but
// the KeyServer methods, so it holds over servers that have nothing else.
func TestLockDelayOverPlainServers(t *testing.T) {
	const ttl, d = 2 * time.Second, 5 * time.Second
	fc := clock.NewFake(t0)
	servers := memoryServers(t, fc, 3)
	plain := []keyserver.KeyServer{plainServer{servers[0]}, plainServer{servers[1]}, servers[2]}
	c := testClient(t, fc, plain, WithLockDelay(d), WithRetryCount(0))
	_, err := c.Acquire(bg, "job", ttl)
	require.NoError(t, err)
	fc.Advance(ttl + d - time.Millisecond) // past the lease, a millisecond before the delay's end
	_, err = c.TryAcquire(bg, "job", ttl)
	require.ErrorIs(t, err, ErrHeldElsewhere, "in the delay")
	fc.Advance(time.Millisecond)
	l, err := c.TryAcquire(bg, "job", ttl)
	require.NoError(t, err, "once the delay has passed")
	require.NoError(t, l.Release(bg))
}

// TestLockDelayKeepsAnAbandonedLockUngranted: a holder that stops
// extending leaves the name ungranted, to every client, until d after its
// expiry; and the holder hears it lost at the usual time.
func TestLockDelayKeepsAnAbandonedLockUngranted(t *testing.T) {
	const ttl, d = 2 * time.Second, 5 * time.Second
	fc := clock.NewFake(t0)
	servers := memoryServers(t, fc, 3)
	holder := testClient(t, fc, servers, WithLockDelay(d))
	other := testClient(t, fc, servers)
	l, err := holder.Acquire(bg, "job", ttl)
	require.NoError(t, err)
	until := l.Until()
	assert.False(t, until.After(t0.Add(ttl)), "validity %v past the TTL: the delay is the servers', not the holder's", until.Sub(t0))

	fc.Advance(ttl) // the lease is over on every server
	require.ErrorIs(t, l.Err(), ErrLockLost, "the holder hears of its loss as without a delay")
	assert.False(t, l.Until().After(until), "the delay never lengthens the holder's validity")
	_, err = other.TryAcquire(bg, "job", ttl)
	require.ErrorIs(t, err, ErrHeldElsewhere, "in the delay")
	var qe *QuorumError
	require.ErrorAs(t, err, &qe)
	fc.Advance(d - time.Millisecond)
	_, err = other.TryAcquire(bg, "job", ttl)
	require.ErrorIs(t, err, ErrHeldElsewhere, "a millisecond before the delay ends")
	fc.Advance(time.Millisecond)
	l2, err := other.TryAcquire(bg, "job", ttl)
	require.NoError(t, err, "once the delay has passed")
	require.NoError(t, l2.Release(bg))
}

func TestLockDelayFollowsExtensions(t *testing.T) {
	const ttl, d = 2 * time.Second, 3 * time.Second
	c, fc := memoryClient(t, WithLockDelay(d))
	l, err := c.Acquire(bg, "job", ttl)
	require.NoError(t, err)
	fc.Advance(time.Second)
	require.NoError(t, l.Extend(bg, ttl))
	fc.Advance(ttl + d - time.Millisecond) // d after the extension's TTL, less 1 ms
	_, err = c.TryAcquire(bg, "job", ttl)
	require.ErrorIs(t, err, ErrHeldElsewhere)
	fc.Advance(time.Millisecond)
	l2, err := c.TryAcquire(bg, "job", ttl)
	require.NoError(t, err)
	require.NoError(t, l2.Release(bg))
}

// TestLockDelayEndsWithARelease: a clean release costs nothing, also in
// the delay of a lock already lost, and so does a cut to WithMinHold.
func TestLockDelayEndsWithARelease(t *testing.T) {
	const ttl, d = 2 * time.Second, time.Minute
	c, fc := memoryClient(t)
	l, err := c.Acquire(bg, "job", ttl, WithLockDelay(d))
	require.NoError(t, err)
	require.NoError(t, l.Release(bg))
	l, err = c.TryAcquire(bg, "job", ttl)
	require.NoError(t, err, "at once after a release")
	require.NoError(t, l.Release(bg))

	l, err = c.Acquire(bg, "job", ttl, WithLockDelay(d))
	require.NoError(t, err)
	fc.Advance(ttl + time.Second)
	require.ErrorIs(t, l.Release(bg), ErrNotHeld, "released after its loss")
	l, err = c.TryAcquire(bg, "job", ttl)
	require.NoError(t, err, "the late release of a lost lock ends its delay")
	require.NoError(t, l.Release(bg))

	l, err = c.Acquire(bg, "job", ttl, WithLockDelay(d), WithMinHold(time.Second))
	require.NoError(t, err)
	require.NoError(t, l.Release(bg))
	_, err = c.TryAcquire(bg, "job", ttl)
	require.ErrorIs(t, err, ErrHeldElsewhere, "within the minimum hold")
	fc.Advance(time.Second)
	l, err = c.TryAcquire(bg, "job", ttl)
	require.NoError(t, err, "the cut to the minimum hold leaves no delay")
	require.NoError(t, l.Release(bg))
}

// TestLockDelayReachesEveryCallOfTheLock: every acquire and extension of
// a lock taken with a delay, a failed attempt's included, asks the servers
// for its TTL plus the delay; its releases and the failed attempt's
// clean-up are plain releases; a cut to WithMinHold carries no delay; a
// primitive's calls and a lock's without a delay carry none.
func TestLockDelayReachesEveryCallOfTheLock(t *testing.T) {
	const ttl, d, minHold = 2 * time.Second, 7 * time.Second, time.Second
	fc := clock.NewFake(t0)
	servers := static.NewCluster(3)
	c := testClient(t, fc, servers.KeyServers(), WithRetryCount(0))
	servers[1].Script(static.OpAcquire, static.Deny)
	servers[2].Script(static.OpAcquire, static.Deny)
	_, err := c.Acquire(bg, "job", ttl, WithLockDelay(d))
	require.ErrorIs(t, err, ErrNotAcquired)
	servers[1].Script(static.OpAcquire)
	servers[2].Script(static.OpAcquire)
	l, err := c.Acquire(bg, "job", ttl, WithLockDelay(d))
	require.NoError(t, err)
	require.NoError(t, l.Extend(bg, ttl))
	require.NoError(t, l.Release(bg))
	l, err = c.Acquire(bg, "cut", ttl, WithLockDelay(d), WithMinHold(minHold))
	require.NoError(t, err)
	require.NoError(t, l.Release(bg))
	l, err = c.Acquire(bg, "plain", ttl)
	require.NoError(t, err)
	require.NoError(t, l.Release(bg))
	p, err := c.Semaphore("sem", 2).Acquire(bg, ttl, WithLockDelay(d))
	require.NoError(t, err)
	require.NoError(t, p.Release(bg))
	require.NoError(t, c.Close()) // waits for the calls left running

	for i, s := range servers {
		extends := 0
		for _, call := range s.Calls() {
			switch {
			case call.Op == static.OpRelease:
				assert.Zero(t, call.TTL, "server %d: %+v", i, call)
			case call.Key == "cut" && call.Op == static.OpExtend: // the cut, at once: the rest of the minimum hold
				assert.Equal(t, minHold, call.TTL, "server %d: the cut to the minimum hold: %+v", i, call)
			case call.Key == "job" || call.Key == "cut":
				assert.Equal(t, ttl+d, call.TTL, "server %d: %+v", i, call)
				if call.Op == static.OpExtend {
					extends++
				}
			case call.Op == static.OpAcquire || call.Op == static.OpExtend || call.Op == static.OpAcquirePermit:
				assert.Equal(t, ttl, call.TTL, "server %d: %+v", i, call)
			}
		}
		assert.Equal(t, 1, extends, "server %d: the extension", i)
		assert.Equal(t, 1, countOf(s.Calls(), static.OpExtend, "cut"), "server %d: the cut", i)
	}
	// Rule 1, token by token: an acquire on server 0 that may have stored
	// is followed by a release of its token there. (The failed attempt's
	// undo runs in the background, and may come after the next attempt's
	// acquire, which server 0 then refuses.)
	calls := servers[0].Calls()
	for i, call := range calls {
		if call.Op != static.OpAcquire || call.Key != "job" || !call.OK && call.Err == nil {
			continue
		}
		released := slices.ContainsFunc(calls[i+1:], func(c static.Call) bool { return c.Op == static.OpRelease && c.Token == call.Token })
		assert.True(t, released, "acquire %d not followed by its release: %+v", i, calls)
	}
}

// countOf counts the calls of op on key.
func countOf(calls []static.Call, op static.Op, key string) int {
	n := 0
	for _, c := range calls {
		if c.Op == op && c.Key == key {
			n++
		}
	}
	return n
}

func TestLockDelayIsIgnoredByPrimitives(t *testing.T) {
	c, fc := memoryClient(t, WithLockDelay(time.Minute))
	sem := c.Semaphore("encoder", 1)
	p, err := sem.Acquire(bg, 2*time.Second)
	require.NoError(t, err)
	_ = p
	fc.Advance(2 * time.Second)
	p, err = sem.TryAcquire(bg, 2*time.Second)
	require.NoError(t, err, "an expired permit is free at once: no delay")
	require.NoError(t, p.Release(bg))
}

// TestLockDelayIsQuarantined: a server that lost its data may have lost a
// key kept for a TTL and then the delay, so a restarted server's grants
// of a lock with a lock-delay count once the TTL plus the delay has
// passed since it came back, not the TTL alone.
func TestLockDelayIsQuarantined(t *testing.T) {
	const ttl, d = 10 * time.Second, 5 * time.Second
	fc := clock.NewFake(t0)
	l, cl := livesCluster(fc, 3)
	c := testClient(t, fc, cl.KeyServers(), WithLockDelay(d))
	granted(t, c, "before", ttl)
	fc.Advance(time.Minute)
	l.restart(1)
	l.restart(2)
	fc.Advance(ttl + d - time.Millisecond)
	_, err := c.TryAcquire(bg, "after", ttl)
	assert.Equal(t, []int{1, 2}, quarantined(t, err), "a millisecond before the TTL plus the delay")
	assert.ErrorContains(t, err, "its grants count in 1ms")
	c.bg.Wait() // the undo of the quarantined grants, which a loaded .ci/run found still on its way
	fc.Advance(time.Millisecond)
	granted(t, c, "after", ttl)
}
