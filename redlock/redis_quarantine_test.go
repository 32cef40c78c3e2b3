package redlock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goredlock/goredlock/internal/redistest"
	"github.com/goredlock/goredlock/keyserver"
	"github.com/goredlock/goredlock/redlock"
)

// TestRedisRestartedMajorityIsQuarantined restarts two of three real
// Redis nodes (empty: no persistence) while a client uses them: their
// grants do not count, so the lock is refused, until the TTL has passed
// since they came back, and then it is granted. A third node restarted
// alone costs nothing: the other two still make a quorum. With
// appendfsync always, nothing is quarantined.
func TestRedisRestartedMajorityIsQuarantined(t *testing.T) {
	const ttl = 1500 * time.Millisecond
	// The default server timeout of this TTL (75 ms) was missed by a
	// healthy node under load, failing a call the test expects granted.
	c, cluster := redisClient(t, 3, redlock.WithServerTimeout(400*time.Millisecond))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	lock, err := c.TryAcquire(ctx, "job", ttl)
	require.NoError(t, err, "nodes up before the client count")
	require.NoError(t, lock.Release(ctx))

	began := time.Now()
	cluster.Nodes[0].Restart()
	cluster.Nodes[1].Restart()
	var refused int
	for {
		lock, err := c.TryAcquire(ctx, "job", ttl)
		if err == nil {
			assert.GreaterOrEqual(t, time.Since(began), ttl, "granted only once the TTL has passed since the restarts")
			require.NoError(t, lock.Release(ctx))
			break
		}
		require.ErrorIs(t, err, redlock.ErrQuarantined, "refused for the quarantine, nothing else")
		var qe *redlock.QuorumError
		require.ErrorAs(t, err, &qe)
		for _, f := range qe.Failed {
			assert.Contains(t, []int{0, 1}, f.Server, "only the restarted nodes: %v", f)
		}
		refused++
		require.NoError(t, ctx.Err(), "never granted")
		time.Sleep(50 * time.Millisecond)
	}
	assert.Positive(t, refused, "refused while quarantined")
	// The TTL is 1.5 s; Redis reports uptime in whole seconds, so the
	// quarantine can last up to a second longer. The bound is the test's
	// context: only a quarantine that never ends breaks it.

	// The grant above needed one restarted node out of quarantine, not
	// both: wait out the longest quarantine (the TTL and a second of
	// uptime rounding) before the third node restarts.
	time.Sleep(time.Until(began.Add(ttl + time.Second + 200*time.Millisecond)))
	cluster.Nodes[2].Restart()
	lock, err = c.TryAcquire(ctx, "job", ttl)
	require.NoError(t, err, "one node of three restarted: the others are a quorum")
	require.NoError(t, lock.Release(ctx))

	durable := redistest.Start(t, 3, redistest.WithAppendFsyncAlways())
	dc := clientOn(t, durable)
	_, err = dc.TryAcquire(ctx, "job", ttl)
	require.NoError(t, err)
	durable.Nodes[0].Restart()
	durable.Nodes[1].Restart()
	lock, err = dc.TryAcquire(ctx, "other", ttl)
	require.NoError(t, err, "appendfsync always: restarted nodes kept their keys, nothing to quarantine")
	require.NoError(t, lock.Release(ctx))
}

// TestRedisFreshProcessAfterMajorityRestart is rule 19: three of five
// nodes without persistence restart empty while a lock with a TTL of 5 s
// is held; a client made afterwards (a fresh process: a cron job, redlock
// run) is refused, as held elsewhere, until that TTL has passed since the
// restart, and then granted. With the opt-out it is granted at once: the
// overlap the rule prevents.
func TestRedisFreshProcessAfterMajorityRestart(t *testing.T) {
	const ttl = 5 * time.Second
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	holder, cluster := redisClient(t, 5)
	asked := time.Now() // the holder's keys live until after asked+ttl
	held, err := holder.TryAcquire(ctx, "cq", ttl)
	require.NoError(t, err)
	// A grant returns at a quorum: every node must hold it before three
	// restart, or the client without the quarantine could take it first
	// on a node the holder's call had not reached yet.
	require.Eventually(t, func() bool {
		for _, n := range cluster.Nodes {
			if get(n, "cq") != held.Token() {
				return false
			}
		}
		return true
	}, 5*time.Second, time.Millisecond, "the holder's grant on every node")

	began := time.Now()
	for _, n := range cluster.Nodes[:3] {
		n.Restart()
	}

	unsafe := clientOn(t, cluster, redlock.WithQuarantine(redlock.NoQuarantine))
	lock, err := unsafe.TryAcquire(ctx, "cq", ttl)
	require.NoError(t, err, "without the quarantine the restarted majority grants what the holder still has")
	require.NoError(t, lock.Release(ctx))

	fresh := clientOn(t, cluster)
	var refused int
	for {
		lock, err := fresh.TryAcquire(ctx, "cq", ttl)
		if err == nil {
			assert.GreaterOrEqual(t, time.Since(began), ttl, "granted only once the TTL has passed since the restart")
			require.NoError(t, lock.Release(ctx))
			break
		}
		require.ErrorIs(t, err, redlock.ErrQuarantined)
		if time.Now().Before(asked.Add(ttl)) {
			// Past it, the nodes that kept their data may have let the
			// holder's keys expire while the restarted ones, whose
			// quarantine began later, are still quarantined.
			require.ErrorIs(t, err, redlock.ErrHeldElsewhere, "the nodes that kept their data refuse; the others cannot know")
		}
		refused++
		require.NoError(t, ctx.Err(), "never granted")
		time.Sleep(100 * time.Millisecond)
	}
	assert.Greater(t, refused, 10, "refused while the restarted nodes were quarantined")
}

// TestRedisFailuresAreNotRestarts is rule 22: a server that cannot be
// asked (a wrong password, TLS to a plain Redis, a closed port) fails with
// its own cause, never as ErrQuarantined; one answering as a replica is
// refused by name (rule 21). Each is one server of three, and the other two
// still grant.
func TestRedisFailuresAreNotRestarts(t *testing.T) {
	cluster := redistest.Start(t, 3, redistest.WithPassword("right"))
	replica := redistest.Start(t, 2)
	replica.Nodes[1].ReplicaOf(replica.Nodes[0])
	closed := redistest.Start(t, 1)
	closed.Nodes[0].Kill()
	urls := cluster.URLs("right")
	for _, tc := range []struct {
		name, url string
		cause     string
		permanent bool
	}{
		{"wrong password", cluster.Nodes[2].URL("wrong"), "authentication failed", true},
		{"TLS to a plain Redis", "rediss://" + cluster.Nodes[2].Addr(), "TLS handshake", false},
		{"closed port", closed.Nodes[0].URL(""), "refused", false},
		{"a replica", replica.Nodes[1].URL(""), "is a replica", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := redlock.New(serversAt(t, []string{urls[0], urls[1], tc.url}), redlock.WithServerTimeout(500*time.Millisecond))
			require.NoError(t, err)
			defer c.Close()
			var failure error
			c2, err := redlock.New(serversAt(t, []string{tc.url}), redlock.WithServerTimeout(500*time.Millisecond))
			require.NoError(t, err)
			defer c2.Close()
			bg := context.Background()
			_, failure = c2.TryAcquire(bg, "job", 10*time.Second)
			require.Error(t, failure)
			assert.NotErrorIs(t, failure, redlock.ErrQuarantined)
			assert.ErrorContains(t, failure, tc.cause)
			assert.Equal(t, tc.permanent, errors.Is(failure, keyserver.ErrPermanent), "%v", failure)

			lock, err := c.TryAcquire(bg, "job", 10*time.Second)
			require.NoError(t, err, "the two others still make a quorum")
			require.NoError(t, lock.Release(bg))
		})
	}
}
