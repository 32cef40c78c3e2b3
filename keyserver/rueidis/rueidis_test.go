package rueidis_test

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/goredlock/goredlock/internal/redisscript"
	"github.com/goredlock/goredlock/internal/redistest"
	"github.com/goredlock/goredlock/keyserver"
	"github.com/goredlock/goredlock/keyserver/keyservertest"
	rueidisks "github.com/goredlock/goredlock/keyserver/rueidis"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestConformance(t *testing.T) {
	c := newClient(t, redistest.Start(t, 1).Nodes[0].Addr())
	keyservertest.Run(t, func(t *testing.T) keyserver.KeyServer { return newServer(t, c) })
}

func TestConformanceOverCluster(t *testing.T) {
	addr := startClusterNode(t)
	c := newClient(t, addr)
	keyservertest.Run(t, func(t *testing.T) keyserver.KeyServer { return newServer(t, c) })
}

func TestConformanceThroughSentinel(t *testing.T) {
	master := redistest.Start(t, 1).Nodes[0]
	sentinel := startSentinel(t, master.Addr(), time.Minute)
	c := newClient(t, sentinel, func(o *rueidis.ClientOption) { o.Sentinel = rueidis.SentinelOption{MasterSet: "locks"} })
	keyservertest.Run(t, func(t *testing.T) keyserver.KeyServer { return newServer(t, c) })
	s := newServer(t, c)
	assert.Equal(t, master.Addr(), s.String(), "named after the master the sentinel named")
	ok, err := s.Acquire(bg, "through-sentinel", "t", time.Minute)
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, "t", do(t, master.Addr(), "GET", "through-sentinel"))
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
		var redisErr *rueidis.RedisError
		assert.True(t, errors.As(err, &redisErr), "%s: rueidis's error is wrapped: %v", name, err)
	}
	assert.Equal(t, "list", do(t, addr, "TYPE", "jobs"))
	assert.Equal(t, int64(1), do(t, addr, "LLEN", "jobs"))
	assert.Equal(t, int64(-1), do(t, addr, "PTTL", "jobs"), "no TTL was set on it")
}

func TestErrorsNameTheServer(t *testing.T) {
	node := redistest.Start(t, 1).Nodes[0]
	c := newClient(t, node.Addr())
	assert.Equal(t, node.Addr(), newServer(t, c).String(), "named after its node by default")
	named := newServer(t, c, rueidisks.WithName("orders-1"))
	assert.Equal(t, "orders-1", named.String())
	node.Kill()
	ctx, cancel := context.WithTimeout(bg, 300*time.Millisecond)
	defer cancel()
	_, err := named.Release(ctx, "k", "t")
	require.Error(t, err)
	assert.Contains(t, err.Error(), `orders-1: release "k": `)
}

func TestDefaultNameOfACluster(t *testing.T) {
	addr := startClusterNode(t)
	s := newServer(t, newClient(t, addr))
	assert.Equal(t, addr, s.String(), "the one node of this cluster")
}

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
	// The first call may find the old connection broken; rueidis then
	// reconnects, and the redlock client's next attempt gets through.
	deadline := time.Now().Add(5 * time.Second)
	for {
		ok, err = s.Extend(bg, "k", "t", time.Minute)
		if err == nil || time.Now().After(deadline) {
			break
		}
	}
	require.NoError(t, err)
	assert.True(t, ok)
	assert.Equal(t, "t", do(t, node.Addr(), "GET", "k"))
}

// A paused node must cost a call no more than its context allows, whether
// the context ends by its deadline or by cancellation before it.
func TestPausedNodeCostsAtMostTheContext(t *testing.T) {
	node := redistest.Start(t, 1).Nodes[0]
	s := newServer(t, newClient(t, node.Addr()))
	_, err := s.Acquire(bg, "warm", "t", time.Second) // an open connection
	require.NoError(t, err)
	node.Pause()
	defer node.Resume()
	ends := map[string]func() (context.Context, context.CancelFunc){
		"deadline": func() (context.Context, context.CancelFunc) { return context.WithTimeout(bg, 200*time.Millisecond) },
		"cancel": func() (context.Context, context.CancelFunc) {
			ctx, cancel := context.WithCancel(bg)
			time.AfterFunc(200*time.Millisecond, cancel)
			return ctx, cancel
		},
		"cancel before the deadline": func() (context.Context, context.CancelFunc) {
			ctx, cancel := context.WithTimeout(bg, 5*time.Second)
			time.AfterFunc(200*time.Millisecond, cancel)
			return ctx, cancel
		},
	}
	for _, how := range []string{"cancel before the deadline", "deadline", "cancel"} {
		ctx, cancel := ends[how]()
		start := time.Now()
		_, err = s.Acquire(ctx, "k", "t", time.Second)
		took := time.Since(start)
		cancel()
		require.Error(t, err, how)
		// Mostly ctx's own error; sometimes rueidis reports the connection
		// an earlier call's deadline broke, which must not pass for ctx's.
		if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
			assert.ErrorIs(t, err, ctx.Err(), how)
		} else {
			assert.Contains(t, err.Error(), "broken by an earlier call", how)
		}
		assert.Less(t, took, time.Second, "%s: a paused server held the call for %v", how, took)
	}
}

func TestCloseWaitsForCommandsLeftRunningThenRefuses(t *testing.T) {
	node := redistest.Start(t, 1).Nodes[0]
	s := rueidisks.New(newClient(t, node.Addr()))
	_, err := s.Acquire(bg, "warm", "t", time.Second)
	require.NoError(t, err)
	node.Pause()
	ctx, cancel := context.WithTimeout(bg, 5*time.Second)
	time.AfterFunc(100*time.Millisecond, cancel)
	_, err = s.Acquire(ctx, "k", "t", time.Minute)
	require.ErrorIs(t, err, context.Canceled, "the call returned; its command may still wait for the paused node")

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

	_, err = s.Acquire(bg, "k2", "t", time.Second)
	require.ErrorIs(t, err, rueidisks.ErrClosed)
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
