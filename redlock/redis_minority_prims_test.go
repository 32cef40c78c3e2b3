package redlock_test

import (
	"context"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goredlock/goredlock/internal/redistest"
	"github.com/goredlock/goredlock/keyserver"
	"github.com/goredlock/goredlock/keyserver/redis"
	"github.com/goredlock/goredlock/redlock"
)

// TestRedisPrimitivesSurviveAPausedMinority is issue 45's tenth promise:
// 5 real nodes, 2 of them paused (SIGSTOP), 9 workers on 3 permits (and on
// a write lock): holds are granted in every 400 ms window, and never more
// than 3 permits (1 writer) at once.
func TestRedisPrimitivesSurviveAPausedMinority(t *testing.T) {
	cluster := redistest.Start(t, 5)
	c := clientOn(t, cluster)
	ctx := context.Background()
	sem := c.Semaphore("pool", 3)
	rw := c.RWMutex("table")
	// Every server identified and connected before the pauses: the
	// windows measure a running client's, not its first contact's.
	for _, take := range []func() (*redlock.Lock, error){
		func() (*redlock.Lock, error) { return sem.Acquire(ctx, 10*time.Second) },
		func() (*redlock.Lock, error) { return rw.Lock(ctx, 10*time.Second) },
	} {
		l, err := take()
		require.NoError(t, err)
		require.NoError(t, l.Release(ctx))
	}
	cluster.Nodes[1].Pause()
	cluster.Nodes[3].Pause()
	defer cluster.Nodes[1].Resume()
	defer cluster.Nodes[3].Resume()

	for _, tc := range []struct {
		name string
		most int
		take func(context.Context) (*redlock.Lock, error)
	}{
		{"permits", 3, func(ctx context.Context) (*redlock.Lock, error) { return sem.Acquire(ctx, 10*time.Second) }},
		{"write holds", 1, func(ctx context.Context) (*redlock.Lock, error) { return rw.Lock(ctx, 10*time.Second) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const window, windows = 400 * time.Millisecond, 8
			began := time.Now()
			var (
				mu      sync.Mutex
				per     [windows]int
				holders int
				most    int
			)
			var wg sync.WaitGroup
			for range 9 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for time.Since(began) < window*windows {
						l, err := tc.take(ctx)
						if err != nil {
							continue // gave up: the next try begins
						}
						mu.Lock()
						if w := int(time.Since(began) / window); w < windows {
							per[w]++
						}
						holders++
						most = max(most, holders)
						mu.Unlock()
						time.Sleep(20 * time.Millisecond)
						mu.Lock()
						holders--
						mu.Unlock()
						l.Release(ctx) //nolint:errcheck // unconfirmed on the paused nodes at worst
					}
				}()
			}
			wg.Wait()
			t.Logf("grants per %v window: %v", window, per)
			assert.LessOrEqual(t, most, tc.most)
			for w, n := range per {
				assert.Positive(t, n, "window %d granted nothing: %v", w, per)
			}
		})
	}
}

// TestRedisCloseWaitsForWatchesSetLate: a waiter's watches on servers
// that did not answer its last attempt (paused here) are set on
// goroutines of their own (watch.go), which Close waits for.
func TestRedisCloseWaitsForWatchesSetLate(t *testing.T) {
	cluster := redistest.Start(t, 5)
	urls := cluster.URLs("")
	holder := clientOn(t, cluster)
	var servers []keyserver.KeyServer
	for _, u := range urls {
		s, err := redis.FromURL(u)
		require.NoError(t, err)
		defer s.Close()
		servers = append(servers, s)
	}
	c, err := redlock.New(servers)
	require.NoError(t, err)
	defer c.Close()
	ctx := context.Background()
	held, err := holder.Semaphore("pool", 1).Acquire(ctx, 10*time.Second)
	require.NoError(t, err)
	defer held.Release(ctx) //nolint:errcheck // the nodes are back by then
	cluster.Nodes[1].Pause()
	cluster.Nodes[3].Pause()
	defer cluster.Nodes[1].Resume()
	defer cluster.Nodes[3].Resume()

	done := make(chan error, 1)
	go func() {
		_, err := c.Semaphore("pool", 1).Acquire(ctx, 10*time.Second)
		done <- err
	}()
	const setter = "redlock.(*watches).arm.func"
	require.Eventually(t, func() bool { return goroutinesIn(setter) > 0 }, 10*time.Second, time.Millisecond,
		"the waiter sets its watches on the paused servers late")
	require.NoError(t, c.Close())
	// One that Close did not wait for would live on for the server timeout
	// (500 ms); one that did is gone but for its last instructions.
	assert.Eventually(t, func() bool { return goroutinesIn(setter) == 0 }, 100*time.Millisecond, time.Millisecond,
		"a setter outlived Close")
	assert.ErrorIs(t, <-done, redlock.ErrClosed)
}

// goroutinesIn counts the goroutines whose stack names fn.
func goroutinesIn(fn string) int {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	n := 0
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, fn) {
			n++
		}
	}
	return n
}
