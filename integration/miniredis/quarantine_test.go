package miniredis_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goredlock/goredlock/redlock"
)

// readSlack is how much earlier than a TTL after a restart a quarantine
// may end: a key server dates the read of a store's marker from before it
// sent TIME (keyserver/redis's readIncarnation), so that the age it reports
// is too old by that call's latency, which miniredis, restarting at once,
// does not hide (1.991 s for a TTL of 2 s was seen under the race
// detector on loaded cores).
const readSlack = 50 * time.Millisecond

// restartEmpty stops mr and starts it again on the same port without its
// data, as a Redis without persistence after a crash: its clients'
// connections break, and its marker is gone.
func restartEmpty(t *testing.T, mr *miniredis.Miniredis) {
	t.Helper()
	mr.Close()
	mr.FlushAll()
	require.NoError(t, mr.Restart())
}

// TestRestartedMajorityIsQuarantined restarts two of three servers empty
// while a client uses them: their grants do not count until the TTL has
// passed since they came back (their new marker, on their own clock, is
// younger), then the lock is granted. miniredis answers INFO without a
// run_id and refuses CONFIG, so the marker alone tells the restart, as for
// a user whose ACL denies both.
func TestRestartedMajorityIsQuarantined(t *testing.T) {
	const ttl = time.Second
	mrs := start(t, 3)
	c := clientOn(t, mrs, steady)
	ctx, cancel := context.WithTimeout(bg, 20*time.Second)
	defer cancel()
	l, err := c.TryAcquire(ctx, "job", ttl)
	require.NoError(t, err, "servers up an hour before the client")
	require.NoError(t, l.Release(ctx))

	began := time.Now()
	restartEmpty(t, mrs[0])
	restartEmpty(t, mrs[1])
	refused := 0
	for {
		l, err := c.TryAcquire(ctx, "job", ttl)
		if err == nil {
			assert.GreaterOrEqual(t, time.Since(began), ttl-readSlack, "granted only once the TTL has passed since the restarts")
			require.NoError(t, l.Release(ctx))
			break
		}
		if errors.Is(err, redlock.ErrQuarantined) {
			refused++
		} else {
			// miniredis restarts at once: a call can still go out on a
			// connection the restart broke before the client has seen
			// it end (or, on a loaded machine, time out while the
			// client reconnects). Only the restarted servers may fail.
			var qe *redlock.QuorumError
			require.ErrorAs(t, err, &qe)
			for _, f := range qe.Failed {
				require.Contains(t, []int{0, 1}, f.Server, "only the restarted servers fail: %v", err)
			}
			t.Logf("not for the quarantine: %v", err)
		}
		require.NoError(t, ctx.Err(), "never granted")
		time.Sleep(20 * time.Millisecond)
	}
	assert.Positive(t, refused, "refused while quarantined")
}

// TestFreshProcessAfterMajorityRestart is rule 19 on miniredis: two of
// three servers restart empty while a lock is held; a client made
// afterwards is refused, as held elsewhere, until the TTL has passed since
// the restart. With the opt-out it is granted at once: the overlap the
// rule prevents.
func TestFreshProcessAfterMajorityRestart(t *testing.T) {
	const ttl = 2 * time.Second
	mrs := start(t, 3)
	holder := clientOn(t, mrs, steady)
	ctx, cancel := context.WithTimeout(bg, 20*time.Second)
	defer cancel()
	held, err := holder.TryAcquire(ctx, "cq", ttl)
	require.NoError(t, err)
	// A grant returns at a quorum: the third server must hold it too
	// before the others restart, or the client without the quarantine
	// could take it there first.
	eventuallyAll(t, mrs, "cq", held.Token(), "the holder's grant")

	began := time.Now()
	restartEmpty(t, mrs[0])
	restartEmpty(t, mrs[1])

	unsafe := clientOn(t, mrs, steady, redlock.WithQuarantine(redlock.NoQuarantine))
	l, err := unsafe.TryAcquire(ctx, "cq", ttl)
	require.NoError(t, err, "without the quarantine the restarted majority grants what the holder still has")
	require.NoError(t, l.Release(ctx))

	fresh := clientOn(t, mrs, steady)
	refused := 0
	for {
		l, err := fresh.TryAcquire(ctx, "cq", ttl)
		if err == nil {
			assert.GreaterOrEqual(t, time.Since(began), ttl-readSlack, "granted only once the TTL has passed since the restart")
			require.NoError(t, l.Release(ctx))
			break
		}
		require.ErrorIs(t, err, redlock.ErrQuarantined)
		if time.Since(began) < ttl {
			// Both restarted servers are quarantined until a TTL after
			// their new markers, made after began; past that, one may
			// grant while the other's quarantine still runs.
			require.ErrorIs(t, err, redlock.ErrHeldElsewhere, "the server that kept its data refuses; the others cannot know")
		}
		refused++
		require.NoError(t, ctx.Err(), "never granted")
		time.Sleep(50 * time.Millisecond)
	}
	assert.Greater(t, refused, 5, "refused while the restarted servers were quarantined")
}

// TestUnseededServersWaitOutTheQuarantine: miniredis servers without a
// marker (a brand-new deployment, as every miniredis.Run is) are
// quarantined for the call's TTL from the client's first look at them;
// NoQuarantine opts out. Hence start's seed.
func TestUnseededServersWaitOutTheQuarantine(t *testing.T) {
	const ttl = time.Second
	mrs := []*miniredis.Miniredis{miniredis.RunT(t), miniredis.RunT(t), miniredis.RunT(t)}
	c := clientOn(t, mrs, steady)
	began := time.Now()
	_, err := c.TryAcquire(bg, "job", ttl)
	require.ErrorIs(t, err, redlock.ErrQuarantined)
	require.Eventually(t, func() bool {
		l, err := c.TryAcquire(context.Background(), "job", ttl)
		if err != nil {
			return false
		}
		assert.GreaterOrEqual(t, time.Since(began), ttl-readSlack)
		return assert.NoError(t, l.Release(bg))
	}, 10*time.Second, 20*time.Millisecond, "granted once the servers' markers are a TTL old")

	unsafe := clientOn(t, []*miniredis.Miniredis{miniredis.RunT(t), miniredis.RunT(t), miniredis.RunT(t)},
		steady, redlock.WithQuarantine(redlock.NoQuarantine))
	l, err := unsafe.TryAcquire(bg, "job", ttl)
	require.NoError(t, err, "NoQuarantine: granted at once")
	require.NoError(t, l.Release(bg))
}
