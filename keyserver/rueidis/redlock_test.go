package rueidis_test

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
	// Acquire returns on a quorum; the last node's answer may still be
	// on its way.
	assert.Eventually(t, func() bool { return holders(t, nodes, "report", lock.Token()) == 3 }, time.Second, 5*time.Millisecond)
	_, err = client.TryAcquire(bg, "report", 10*time.Second)
	require.ErrorIs(t, err, redlock.ErrNotAcquired, "a second taker is refused")
	require.NoError(t, lock.Release(bg))
	assert.Eventually(t, func() bool { return holders(t, nodes, "report", "") == 3 }, time.Second, 5*time.Millisecond)

	// A paused minority is outvoted.
	nodes[2].Pause()
	defer nodes[2].Resume()
	lock, err = client.Acquire(bg, "report", 10*time.Second)
	require.NoError(t, err, "two of three servers answer")
	assert.Eventually(t, func() bool { return holders(t, nodes[:2], "report", lock.Token()) == 2 }, time.Second, 5*time.Millisecond)
	require.NoError(t, lock.Release(bg))

	// A paused majority costs an attempt about one server timeout (5% of
	// the TTL: 100 ms), not the rueidis client's timeouts.
	nodes[1].Pause()
	defer nodes[1].Resume()
	start := time.Now()
	_, err = client.TryAcquire(bg, "report", 2*time.Second)
	require.ErrorIs(t, err, redlock.ErrNotAcquired)
	assert.Less(t, time.Since(start), time.Second)
}

// holders counts the nodes on which key holds value ("" for absent).
func holders(t *testing.T, nodes []*redistest.Node, key, value string) int {
	n := 0
	for _, node := range nodes {
		v, _ := do(t, node.Addr(), "GET", key).(string)
		if v == value {
			n++
		}
	}
	return n
}
