package redlock_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	redigo "github.com/gomodule/redigo/redis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goredlock/goredlock/internal/redistest"
	"github.com/goredlock/goredlock/keyserver"
	"github.com/goredlock/goredlock/redlock"
)

// replicated starts n deployments of a master and one replica, and
// returns each master's URL with query, the masters and the replicas.
func replicated(t testing.TB, n int, query string) (urls []string, masters, replicas []*redistest.Node) {
	t.Helper()
	for i := 0; i < n; i++ {
		// No 5 s wait for more replicas before a full sync.
		pair := redistest.Start(t, 2, redistest.WithArgs("--repl-diskless-sync-delay", "0"))
		pair.Nodes[1].ReplicaOf(pair.Nodes[0])
		urls = append(urls, pair.Nodes[0].URL("")+query)
		masters = append(masters, pair.Nodes[0])
		replicas = append(replicas, pair.Nodes[1])
	}
	return urls, masters, replicas
}

// TestRedisDurableVotes is rule 20: with ?wait=1 a grant returns only once
// the replica has the key; with the replica stopped, that server's vote
// fails within the server timeout and its write is undone, and the two
// other deployments still grant.
func TestRedisDurableVotes(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	urls, masters, replicas := replicated(t, 3, "?wait=1")
	one, err := redlock.New(serversAt(t, urls[:1]), redlock.WithServerTimeout(time.Second))
	require.NoError(t, err)
	defer one.Close()
	lock, err := one.TryAcquire(ctx, "job", 10*time.Second)
	require.NoError(t, err)
	assert.Equal(t, lock.Token(), get(replicas[0], "job"), "the replica has the key when the grant returns")
	require.NoError(t, lock.Extend(ctx, 10*time.Second))
	require.NoError(t, lock.Release(ctx))

	c, err := redlock.New(serversAt(t, urls), redlock.WithServerTimeout(time.Second))
	require.NoError(t, err)
	defer c.Close()
	lock, err = c.TryAcquire(ctx, "job", 10*time.Second) // each server identified, as a client that has run a while
	require.NoError(t, err)
	require.NoError(t, lock.Release(ctx))

	replicas[0].Pause()
	defer replicas[0].Resume()
	lock, err = c.TryAcquire(ctx, "job", 10*time.Second)
	require.NoError(t, err, "granted through the two deployments whose replica answers")
	require.NoError(t, lock.Release(ctx))
	var qe *redlock.QuorumError

	began := time.Now()
	_, err = one.TryAcquire(ctx, "alone", 10*time.Second)
	took := time.Since(began)
	require.ErrorIs(t, err, redlock.ErrNotAcquired)
	require.ErrorAs(t, err, &qe)
	require.Len(t, qe.Failed, 1)
	assert.NotErrorIs(t, qe.Failed[0], keyserver.ErrPermanent, "a replica that catches up confirms the next write")
	assert.ErrorContains(t, err, "write not confirmed") // "0 of 1 replicas acknowledged it in time", or a deadline on a loaded machine
	assert.Less(t, took, 3*time.Second, "within the server timeout (and a loaded machine's slack)")
	require.NoError(t, one.Close(), "waits for the undo")
	assert.Empty(t, get(masters[0], "alone"), "the unconfirmed write was undone")
}

// BenchmarkRedisDurableVotes: 64 goroutines on distinct keys over three
// master + replica deployments, without and with ?wait=1: calls made
// together share one WAIT per server (locks/WAIT, on the first).
func BenchmarkRedisDurableVotes(b *testing.B) {
	for _, query := range []string{"", "?wait=1"} {
		b.Run("query="+query, func(b *testing.B) {
			urls, masters, _ := replicated(b, 3, query)
			c, err := redlock.New(serversAt(b, urls))
			require.NoError(b, err)
			defer c.Close()
			var (
				mu sync.Mutex
				n  int
			)
			b.SetParallelism(32) // 64 goroutines on 2 cores
			masters[0].MustDo("CONFIG", "RESETSTAT")
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				mu.Lock()
				n++
				name := fmt.Sprint("k", n)
				mu.Unlock()
				for pb.Next() {
					lock, err := c.Acquire(context.Background(), name, 10*time.Second)
					if err != nil {
						b.Error(err)
						return
					}
					if err := lock.Release(context.Background()); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.StopTimer()
			if waits := commandCalls(b, masters[0], "wait"); waits > 0 {
				b.ReportMetric(float64(b.N)/float64(waits), "locks/WAIT")
			}
		})
	}
}

// commandCalls returns how many times node ran cmd since its statistics
// were reset (INFO commandstats).
func commandCalls(tb testing.TB, node *redistest.Node, cmd string) int {
	tb.Helper()
	info, err := redigo.String(node.MustDo("INFO", "commandstats"), nil)
	require.NoError(tb, err)
	for _, line := range strings.Split(info, "\n") {
		if rest, ok := strings.CutPrefix(line, "cmdstat_"+cmd+":calls="); ok {
			n, err := strconv.Atoi(rest[:strings.IndexByte(rest, ',')])
			require.NoError(tb, err)
			return n
		}
	}
	return 0
}
