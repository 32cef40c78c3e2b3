package goredis_test

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/goredlock/goredlock/internal/redisscript"
	"github.com/goredlock/goredlock/internal/redistest"
	"github.com/goredlock/goredlock/keyserver"
	"github.com/goredlock/goredlock/keyserver/goredis"
	"github.com/goredlock/goredlock/keyserver/keyservertest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestConformance(t *testing.T) {
	rdb := newClient(t, redistest.Start(t, 1).Nodes[0].Addr())
	keyservertest.Run(t, func(t *testing.T) keyserver.KeyServer { return newServer(t, rdb) })
}

func TestConformanceOverCluster(t *testing.T) {
	rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{startClusterNode(t)}})
	t.Cleanup(func() { rdb.Close() })
	keyservertest.Run(t, func(t *testing.T) keyserver.KeyServer { return newServer(t, rdb) })
}

func TestConformanceThroughSentinel(t *testing.T) {
	master := redistest.Start(t, 1).Nodes[0]
	sentinel := startSentinel(t, master.Addr(), time.Minute)
	rdb := redis.NewFailoverClient(&redis.FailoverOptions{MasterName: "locks", SentinelAddrs: []string{sentinel}})
	t.Cleanup(func() { rdb.Close() })
	keyservertest.Run(t, func(t *testing.T) keyserver.KeyServer { return newServer(t, rdb) })
	s := newServer(t, rdb)
	ok, err := s.Acquire(bg, "through-sentinel", "t", time.Minute)
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, "t", do(t, master.Addr(), "GET", "through-sentinel"), "the key is on the master the sentinel named")
}

func TestWrongTypeKeyIsAnErrorAndLeftAlone(t *testing.T) {
	addr := redistest.Start(t, 1).Nodes[0].Addr()
	s := newServer(t, newClient(t, addr))
	do(t, addr, "RPUSH", "jobs", "x")
	for name, call := range map[string]func() (bool, error){
		"acquire": func() (bool, error) { return s.Acquire(bg, "jobs", "t", time.Second) },
		"extend":  func() (bool, error) { return s.Extend(bg, "jobs", "t", time.Second) },
		"release": func() (bool, error) { return s.Release(bg, "jobs", "t") },
	} {
		ok, err := call()
		assert.False(t, ok, name)
		require.Error(t, err, name)
		assert.Contains(t, err.Error(), "WRONGTYPE", name)
		assert.ErrorIs(t, err, keyserver.ErrPermanent, "%s: retrying cannot fix a wrong type", name)
		assert.Contains(t, err.Error(), name+` "jobs"`, "the error names the operation and the key")
		assert.Contains(t, err.Error(), addr, "the error names the server")
		var redisErr redis.Error
		assert.True(t, errors.As(err, &redisErr), "%s: go-redis's error is wrapped: %v", name, err)
	}
	assert.Equal(t, "list", do(t, addr, "TYPE", "jobs"))
	assert.Equal(t, int64(1), do(t, addr, "LLEN", "jobs"))
	assert.Equal(t, int64(-1), do(t, addr, "PTTL", "jobs"), "no TTL was set on it")
}

func TestErrorsNameTheServer(t *testing.T) {
	node := redistest.Start(t, 1).Nodes[0]
	named := newServer(t, newClient(t, node.Addr()), goredis.WithName("orders-1"))
	assert.Equal(t, "orders-1", named.String())
	node.Kill()
	ctx, cancel := context.WithTimeout(bg, 300*time.Millisecond)
	defer cancel()
	_, err := named.Release(ctx, "k", "t")
	require.Error(t, err)
	assert.Contains(t, err.Error(), `orders-1: release "k": `)
}

func TestDefaultNames(t *testing.T) {
	single := redis.NewClient(&redis.Options{Addr: "10.0.0.1:6379", Password: "hunter2"})
	failover := redis.NewFailoverClient(&redis.FailoverOptions{MasterName: "m", SentinelAddrs: []string{"10.0.0.9:26379"}})
	cluster := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{"10.0.0.1:7000", "10.0.0.2:7000"}})
	ring := redis.NewRing(&redis.RingOptions{Addrs: map[string]string{"b": "10.0.0.2:6379", "a": "10.0.0.1:6379"}})
	for _, c := range []redis.UniversalClient{single, failover, cluster, ring} {
		t.Cleanup(func() { c.Close() })
	}
	for want, c := range map[string]redis.UniversalClient{
		"10.0.0.1:6379":                       single,
		"sentinel":                            failover,
		"cluster 10.0.0.1:7000,10.0.0.2:7000": cluster,
		"ring 10.0.0.1:6379,10.0.0.2:6379":    ring,
		"redis":                               wrapped{single},
	} {
		assert.Equal(t, want, goredis.New(c).String())
	}
	assert.NotContains(t, goredis.New(single).String(), "hunter2")
}

// wrapped is a client of a type goredis does not know.
type wrapped struct{ redis.UniversalClient }

func TestScriptFlushIsSurvived(t *testing.T) {
	addr := redistest.Start(t, 1).Nodes[0].Addr()
	s := newServer(t, newClient(t, addr))
	ok, err := s.Acquire(bg, "k", "t", time.Minute)
	require.NoError(t, err)
	require.True(t, ok)
	digest := sha1.Sum([]byte(redisscript.Set))
	assert.Equal(t, []any{int64(1)}, do(t, addr, "SCRIPT", "EXISTS", hex.EncodeToString(digest[:])),
		"cached under the digest every Redis key server uses")
	do(t, addr, "SCRIPT", "FLUSH")
	ok, err = s.Extend(bg, "k", "t", time.Minute)
	require.NoError(t, err)
	assert.True(t, ok)
	do(t, addr, "SCRIPT", "FLUSH")
	ok, err = s.Release(bg, "k", "t")
	require.NoError(t, err)
	assert.True(t, ok)
}

func TestTTLIsSetInMilliseconds(t *testing.T) {
	addr := redistest.Start(t, 1).Nodes[0].Addr()
	s := newServer(t, newClient(t, addr))
	ok, err := s.Acquire(bg, "k", "t", 90*time.Second)
	require.NoError(t, err)
	require.True(t, ok)
	assert.InDelta(t, 90_000, do(t, addr, "PTTL", "k"), 1000)
	assert.Equal(t, "t", do(t, addr, "GET", "k"))
}

func TestRestartedNodeIsRepopulatedByExtend(t *testing.T) {
	node := redistest.Start(t, 1).Nodes[0]
	s := newServer(t, newClient(t, node.Addr()))
	ok, err := s.Acquire(bg, "k", "t", time.Minute)
	require.NoError(t, err)
	require.True(t, ok)
	node.Restart()
	assert.Nil(t, do(t, node.Addr(), "GET", "k"), "restarted empty")
	ok, err = s.Extend(bg, "k", "t", time.Minute) // on a pooled connection the restart broke
	require.NoError(t, err)
	assert.True(t, ok)
	assert.Equal(t, "t", do(t, node.Addr(), "GET", "k"))
}

// A paused node must cost a call no more than its context allows, whether
// or not the client was made with ContextTimeoutEnabled, and whether the
// context ends by its deadline or by cancellation.
func TestPausedNodeCostsAtMostTheContext(t *testing.T) {
	for _, contextTimeout := range []bool{false, true} {
		node := redistest.Start(t, 1).Nodes[0]
		rdb := newClient(t, node.Addr(), func(o *redis.Options) {
			o.ContextTimeoutEnabled = contextTimeout
			o.ReadTimeout = 5 * time.Second // far beyond the contexts below
		})
		s := newServer(t, rdb)
		_, err := s.Acquire(bg, "warm", "t", time.Second) // a pooled connection
		require.NoError(t, err)
		node.Pause()
		ends := map[string]func() (context.Context, context.CancelFunc){
			"deadline": func() (context.Context, context.CancelFunc) { return context.WithTimeout(bg, 200*time.Millisecond) },
			"cancel": func() (context.Context, context.CancelFunc) {
				ctx, cancel := context.WithCancel(bg)
				time.AfterFunc(200*time.Millisecond, cancel)
				return ctx, cancel
			},
		}
		for how, newCtx := range ends {
			ctx, cancel := newCtx()
			start := time.Now()
			_, err = s.Acquire(ctx, "k", "t", time.Second)
			took := time.Since(start)
			cancel()
			require.Error(t, err, "%s, ContextTimeoutEnabled=%v", how, contextTimeout)
			assert.ErrorIs(t, err, ctx.Err(), "%s, ContextTimeoutEnabled=%v", how, contextTimeout)
			assert.Less(t, took, time.Second, "%s, ContextTimeoutEnabled=%v: a paused server held the call for %v", how, contextTimeout, took)
		}
		node.Resume()
	}
}

func TestCloseWaitsForCommandsLeftRunningThenRefuses(t *testing.T) {
	node := redistest.Start(t, 1).Nodes[0]
	s := goredis.New(newClient(t, node.Addr(), func(o *redis.Options) { o.ReadTimeout = time.Minute }))
	_, err := s.Acquire(bg, "warm", "t", time.Second)
	require.NoError(t, err)
	node.Pause()
	ctx, cancel := context.WithTimeout(bg, 100*time.Millisecond)
	defer cancel()
	_, err = s.Acquire(ctx, "k", "t", time.Minute)
	require.ErrorIs(t, err, context.DeadlineExceeded, "the call returned; its command still waits for the paused node")

	closed := make(chan struct{})
	go func() {
		defer close(closed)
		s.Close()
	}()
	select {
	case <-closed:
		t.Fatal("Close returned while a command was still waiting for the paused node")
	case <-time.After(200 * time.Millisecond):
	}
	node.Resume() // the command gets its answer, and Close can return
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatal("Close still waiting after the node resumed")
	}
	assert.Equal(t, "t", do(t, node.Addr(), "GET", "k"), "the late command did run: the caller must release it (redlock does)")

	_, err = s.Acquire(bg, "k2", "t", time.Second)
	require.ErrorIs(t, err, goredis.ErrClosed)
	assert.Nil(t, do(t, node.Addr(), "GET", "k2"), "nothing is sent after Close")
	require.NoError(t, s.Close(), "a second Close")
}

func TestCancelledContextSendsNothing(t *testing.T) {
	addr := redistest.Start(t, 1).Nodes[0].Addr()
	s := newServer(t, newClient(t, addr))
	ctx, cancel := context.WithCancel(bg)
	cancel()
	_, err := s.Acquire(ctx, "k", "t", time.Minute)
	require.ErrorIs(t, err, context.Canceled)
	assert.Nil(t, do(t, addr, "GET", "k"))
}
