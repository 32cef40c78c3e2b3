package rueidis_test

import (
	"context"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goredlock/goredlock/internal/redistest"
	rueidisks "github.com/goredlock/goredlock/keyserver/rueidis"
)

// Through a failover client, the key server follows the master the
// sentinels elect: a lock written (and replicated) before the master died
// is still held after the failover. A write the replica had not received
// would be lost, which is why one Sentinel deployment is one Redlock
// server, not several.
func TestSentinelFailoverKeepsReplicatedLocks(t *testing.T) {
	nodes := redistest.Start(t, 2).Nodes
	master, replica := nodes[0], nodes[1]
	host, port, err := net.SplitHostPort(master.Addr())
	require.NoError(t, err)
	do(t, replica.Addr(), "REPLICAOF", host, port)
	waitFor(t, "the replica to sync", func() bool {
		return strings.Contains(fmt.Sprint(do(t, replica.Addr(), "INFO", "replication")), "master_link_status:up")
	})
	sentinel := startSentinel(t, master.Addr(), 300*time.Millisecond)
	_, replicaPort, err := net.SplitHostPort(replica.Addr())
	require.NoError(t, err)
	waitFor(t, "the sentinel to find the replica", func() bool {
		return strings.Contains(fmt.Sprint(do(t, sentinel, "SENTINEL", "REPLICAS", "locks")), replicaPort)
	})

	c := newClient(t, sentinel, func(o *rueidis.ClientOption) { o.Sentinel = rueidis.SentinelOption{MasterSet: "locks"} })
	s := newServer(t, c, rueidisks.WithName("locks"))
	ok, err := s.Acquire(bg, "report", "a", time.Minute)
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, int64(1), do(t, master.Addr(), "WAIT", "1", "5000"), "the replica has the key")

	master.Kill()
	waitFor(t, "the failover", func() bool {
		ctx, cancel := context.WithTimeout(bg, time.Second)
		defer cancel()
		ok, err := s.Acquire(ctx, "report", "b", time.Minute)
		require.False(t, ok && err == nil, "b was granted a lock a holds")
		return err == nil
	})
	assert.Equal(t, "a", do(t, replica.Addr(), "GET", "report"), "the promoted replica holds a's lock")
	ok, err = s.Release(bg, "report", "a")
	require.NoError(t, err)
	assert.True(t, ok)
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatalf("timed out waiting for %s", what)
}
