package redlock_test

import (
	"context"
	"net"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-multierror"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goredlock/goredlock/internal/redistest"
	"github.com/goredlock/goredlock/keyserver"
	"github.com/goredlock/goredlock/keyserver/redis"
	"github.com/goredlock/goredlock/redlock"
)

// redisClient starts n real Redis nodes and returns a client over them.
func redisClient(t *testing.T, n int, opts ...redlock.ClientOption) (*redlock.Client, *redistest.Cluster) {
	t.Helper()
	cluster := redistest.Start(t, n)
	return clientOn(t, cluster, opts...), cluster
}

// clientOn returns a client over the nodes of cluster, closed when t ends.
func clientOn(t testing.TB, cluster *redistest.Cluster, opts ...redlock.ClientOption) *redlock.Client {
	t.Helper()
	c, err := redlock.New(serversAt(t, cluster.URLs("")), opts...)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() }) // before the servers close: it waits for what the client left running
	return c
}

// serversAt returns a key server per URL, closed when t ends.
func serversAt(t testing.TB, urls []string) []keyserver.KeyServer {
	t.Helper()
	var servers []keyserver.KeyServer
	for _, u := range urls {
		s, err := redis.FromURL(u)
		require.NoError(t, err)
		t.Cleanup(func() { s.Close() })
		servers = append(servers, s)
	}
	return servers
}

// warmUp takes and releases a lock of its own with retries, so that c has
// identified and connected to every server before a test's timed part: a
// first contact reads each store's marker, which a 30 ms server timeout
// (a TTL of 600 ms) can miss on loaded cores.
func warmUp(t *testing.T, c *redlock.Client) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	l, err := c.Acquire(ctx, "warm-up", 10*time.Second, redlock.WithRetryCount(-1))
	require.NoError(t, err)
	require.NoError(t, l.Release(ctx))
}

// get reads key on node: "" when it is absent.
func get(node *redistest.Node, key string) string {
	v := node.MustDo("GET", key)
	if v == nil {
		return ""
	}
	return redistest.Text(v)
}

func TestRedisMutualExclusionUnderContention(t *testing.T) {
	c, _ := redisClient(t, 5, redlock.WithRetryCount(-1), redlock.WithRetryDelay(5*time.Millisecond))
	const contenders, rounds = 8, 5
	var (
		holders, overlaps, holds atomic.Int32
		wg                       sync.WaitGroup
	)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for i := 0; i < contenders; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := 0; r < rounds; r++ {
				l, err := c.Acquire(ctx, "shared", 5*time.Second)
				if !assert.NoError(t, err) {
					return
				}
				if holders.Add(1) != 1 {
					overlaps.Add(1)
				}
				holds.Add(1)
				time.Sleep(2 * time.Millisecond) // hold it while the others try
				holders.Add(-1)
				assert.NoError(t, l.Release(ctx))
			}
		}()
	}
	wg.Wait()
	assert.Equal(t, int32(contenders*rounds), holds.Load())
	assert.Equal(t, int32(0), overlaps.Load(), "holders overlapped")
}

func TestRedisSurvivesLossOfMinority(t *testing.T) {
	c, cluster := redisClient(t, 5, redlock.WithRetryCount(0))
	cluster.Nodes[1].Kill()
	cluster.Nodes[3].Kill()
	ctx := context.Background()
	l, err := c.Acquire(ctx, "job", 10*time.Second)
	require.NoError(t, err)
	for _, i := range []int{0, 2, 4} {
		assert.Equal(t, l.Token(), get(cluster.Nodes[i], "job"), "node %d", i)
	}
	require.NoError(t, l.Extend(ctx, 10*time.Second))
	require.NoError(t, l.Release(ctx))
	for _, i := range []int{0, 2, 4} {
		assert.Equal(t, "", get(cluster.Nodes[i], "job"), "node %d after release", i)
	}
}

func TestRedisMajorityDownIsNotAcquiredWithPerNodeErrors(t *testing.T) {
	c, cluster := redisClient(t, 5, redlock.WithRetryCount(0), redlock.WithServerTimeout(time.Second))
	for _, i := range []int{0, 2, 3} {
		cluster.Nodes[i].Kill()
	}
	_, err := c.Acquire(context.Background(), "job", 10*time.Second)
	require.ErrorIs(t, err, redlock.ErrNotAcquired)
	var all *multierror.Error
	require.ErrorAs(t, err, &all)
	var failed []int
	for _, e := range all.Errors {
		var se *redlock.ServerError
		require.ErrorAs(t, e, &se)
		failed = append(failed, se.Server)
		assert.Contains(t, se.Error(), cluster.Nodes[se.Server].Addr())
	}
	sort.Ints(failed)
	assert.Equal(t, []int{0, 2, 3}, failed)
}

func TestRedisPausedMinorityCostsNoWait(t *testing.T) {
	const timeout = 2 * time.Second
	c, cluster := redisClient(t, 5, redlock.WithRetryCount(0), redlock.WithServerTimeout(timeout))
	ctx := context.Background()
	warm, err := c.Acquire(ctx, "warm", 10*time.Second) // pooled connections to every node
	require.NoError(t, err)
	require.NoError(t, warm.Release(ctx))

	cluster.Nodes[0].Pause()
	cluster.Nodes[4].Pause()
	defer cluster.Nodes[0].Resume()
	defer cluster.Nodes[4].Resume()

	start := time.Now()
	l, err := c.Acquire(ctx, "job", 10*time.Second)
	took := time.Since(start)
	require.NoError(t, err)
	assert.Less(t, took, timeout/4, "acquire waited %v for paused nodes", took)

	start = time.Now()
	require.NoError(t, l.Release(ctx))
	took = time.Since(start)
	assert.Less(t, took, timeout+timeout/2, "release took %v with paused nodes", took)
}

func TestRedisRestartedNodeIsRepopulatedByExtend(t *testing.T) {
	c, cluster := redisClient(t, 5)
	ctx := context.Background()
	l, err := c.Acquire(ctx, "job", 10*time.Second)
	require.NoError(t, err)
	cluster.Nodes[2].Restart()
	assert.Equal(t, "", get(cluster.Nodes[2], "job"), "restarted empty")
	// A straggling call that met the restart (a failed dial) may have
	// opened the node's breaker: the extensions that follow its backoff
	// (at most a second) reach it, as a keep-alive's next round would.
	assert.Eventually(t, func() bool {
		return l.Extend(ctx, 10*time.Second) == nil && get(cluster.Nodes[2], "job") == l.Token()
	}, 5*time.Second, 50*time.Millisecond, "the restarted node holds the key again")
	require.NoError(t, l.Release(ctx))
}

func TestRedisScriptFlushIsSurvived(t *testing.T) {
	c, cluster := redisClient(t, 5, redlock.WithRetryCount(0))
	ctx := context.Background()
	l, err := c.Acquire(ctx, "job", 10*time.Second)
	require.NoError(t, err)
	for _, n := range cluster.Nodes {
		n.MustDo("SCRIPT", "FLUSH")
	}
	require.NoError(t, l.Extend(ctx, 10*time.Second))
	require.NoError(t, l.Release(ctx))
	l, err = c.Acquire(ctx, "job", 10*time.Second)
	require.NoError(t, err)
	require.NoError(t, l.Release(ctx))
}

func TestRedisAbandonedLockExpires(t *testing.T) {
	c, _ := redisClient(t, 3, redlock.WithRetryCount(0))
	ctx := context.Background()
	// A 300 ms TTL bounds each server call by 15 ms: the first calls,
	// which dial and identify the servers, go with a long TTL, and a busy
	// machine may still need a few tries.
	warm, err := c.Acquire(ctx, "warm-up", 10*time.Second)
	require.NoError(t, err)
	require.NoError(t, warm.Release(ctx))
	var old *redlock.Lock
	require.Eventually(t, func() bool {
		old, err = c.Acquire(ctx, "job", 300*time.Millisecond)
		return err == nil
	}, 5*time.Second, 20*time.Millisecond, "a 300 ms lock: %v", err)
	_, err = c.Acquire(ctx, "job", time.Second)
	require.ErrorIs(t, err, redlock.ErrNotAcquired)
	var fresh *redlock.Lock
	require.Eventually(t, func() bool {
		fresh, err = c.Acquire(ctx, "job", 10*time.Second)
		return err == nil
	}, 5*time.Second, 20*time.Millisecond, "free after its TTL")
	require.ErrorIs(t, old.Release(ctx), redlock.ErrNotHeld)
	_, err = c.Acquire(ctx, "job", time.Second)
	require.ErrorIs(t, err, redlock.ErrNotAcquired, "the late release left the new holder's keys alone")
	require.NoError(t, fresh.Release(ctx))
}

func TestRedisKeepAliveThenMajorityLostMidJob(t *testing.T) {
	const ttl = 600 * time.Millisecond
	c, cluster := redisClient(t, 5, redlock.WithRetryCount(0))
	ctx := context.Background()
	warmUp(t, c)

	// Do: the job outlives its TTL several times over, then three of five
	// nodes die under it and fn must be told.
	var (
		toldAt  time.Time
		cause   error
		killed  time.Time
		outlive = 3 * ttl
	)
	err := c.Do(ctx, "job", ttl, func(ctx context.Context) error {
		select {
		case <-time.After(outlive):
		case <-ctx.Done():
			t.Errorf("lost after %v with all nodes up: %v", outlive, context.Cause(ctx))
			return nil
		}
		killed = time.Now()
		for _, i := range []int{0, 1, 2} {
			cluster.Nodes[i].Kill()
		}
		select {
		case <-ctx.Done():
			toldAt, cause = time.Now(), context.Cause(ctx)
		case <-time.After(5 * ttl):
			t.Error("fn never told that the lock was lost")
		}
		return nil
	})
	require.ErrorIs(t, err, redlock.ErrLockLost)
	require.ErrorIs(t, cause, redlock.ErrLockLost)
	// The last extension started before the kill, so validity ended at most
	// ttl − drift after it.
	assert.Less(t, toldAt.Sub(killed), ttl, "told %v after the kill", toldAt.Sub(killed))
}

func TestRedisKeepAliveLossSignalledBeforeUntil(t *testing.T) {
	const ttl = 600 * time.Millisecond
	c, cluster := redisClient(t, 5, redlock.WithRetryCount(0))
	ctx := context.Background()
	warmUp(t, c)
	l, err := c.Acquire(ctx, "job", ttl)
	require.NoError(t, err)
	kept := make(chan error, 1)
	go func() { kept <- l.KeepAlive(ctx) }()
	time.Sleep(2 * ttl)
	require.NoError(t, l.Err(), "kept alive past its TTL")
	for _, i := range []int{2, 3, 4} {
		cluster.Nodes[i].Kill()
	}
	select {
	case <-l.Done():
	case <-time.After(5 * ttl):
		t.Fatal("loss never signalled")
	}
	lostAt := time.Now()
	assert.True(t, lostAt.Before(l.Until()), "signalled %v after Until", lostAt.Sub(l.Until()))
	require.ErrorIs(t, <-kept, redlock.ErrLockLost)
	require.ErrorIs(t, l.Err(), redlock.ErrLockLost)
}

// TestRedisOneRedisUnderTwoURLsIsRefused: two URLs that name one Redis
// differently would let it vote twice; the client asks each server's run
// id with its first vote and refuses. No vote waits for another server's
// identity, so the calls made before the slower name answered may be
// granted by the other two servers (one vote each: one store counts
// once); from then on every call fails.
func TestRedisOneRedisUnderTwoURLsIsRefused(t *testing.T) {
	cluster := redistest.Start(t, 2)
	_, port, err := net.SplitHostPort(cluster.Nodes[0].Addr())
	require.NoError(t, err)
	c, err := redlock.New(serversAt(t, []string{cluster.Nodes[0].URL(""), "redis://localhost:" + port, cluster.Nodes[1].URL("")}))
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	ctx := context.Background()
	deadline := time.Now().Add(5 * time.Second)
	for {
		l, err := c.Acquire(ctx, "twice", 10*time.Second)
		if err != nil {
			require.ErrorIs(t, err, redlock.ErrInvalidArgument)
			assert.Contains(t, err.Error(), "key servers 0 (127.0.0.1:"+port+") and 1 (localhost:"+port+") reach the same store")
			break
		}
		require.NoError(t, l.Release(ctx))
		require.True(t, time.Now().Before(deadline), "never refused")
	}
	_, err = c.Acquire(ctx, "twice", 10*time.Second)
	require.ErrorIs(t, err, redlock.ErrInvalidArgument, "every later call")
	assert.Eventually(t, func() bool { return get(cluster.Nodes[0], "twice") == "" && get(cluster.Nodes[1], "twice") == "" },
		5*time.Second, 10*time.Millisecond, "what the refused call was granted is undone")
}
