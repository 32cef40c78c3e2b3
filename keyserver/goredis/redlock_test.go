package goredis_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goredlock/goredlock/internal/redistest"
	"github.com/goredlock/goredlock/keyserver"
	"github.com/goredlock/goredlock/redlock"
)

func TestRedlockOverThreeServers(t *testing.T) {
	nodes := redistest.Start(t, 3).Nodes
	var servers []keyserver.KeyServer
	for _, n := range nodes {
		servers = append(servers, newServer(t, newClient(t, n.Addr())))
	}
	client, err := redlock.New(servers, redlock.WithRetryCount(0))
	require.NoError(t, err)

	lock, err := client.Acquire(bg, "report", 10*time.Second)
	require.NoError(t, err)
	for _, n := range nodes {
		assert.Equal(t, lock.Token(), do(t, n.Addr(), "GET", "report"), "held on %s", n.Addr())
	}
	_, err = client.TryAcquire(bg, "report", 10*time.Second)
	require.ErrorIs(t, err, redlock.ErrNotAcquired, "a second taker is refused")
	require.NoError(t, lock.Release(bg))
	for _, n := range nodes {
		assert.Nil(t, do(t, n.Addr(), "GET", "report"), "released on %s", n.Addr())
	}

	// A paused minority is outvoted.
	nodes[2].Pause()
	defer nodes[2].Resume()
	lock, err = client.Acquire(bg, "report", 10*time.Second)
	require.NoError(t, err, "two of three servers answer")
	assert.Equal(t, lock.Token(), do(t, nodes[0].Addr(), "GET", "report"))
	require.NoError(t, lock.Release(bg))

	// A paused majority costs an attempt about one server timeout (5% of
	// the TTL: 100 ms), not go-redis's ReadTimeout (3 s by default).
	nodes[1].Pause()
	defer nodes[1].Resume()
	start := time.Now()
	_, err = client.TryAcquire(bg, "report", 2*time.Second)
	require.ErrorIs(t, err, redlock.ErrNotAcquired)
	assert.Less(t, time.Since(start), time.Second)
}
