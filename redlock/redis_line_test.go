package redlock_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goredlock/goredlock/internal/redistest"
	"github.com/goredlock/goredlock/keyserver"
	"github.com/goredlock/goredlock/keyserver/redis"
	"github.com/goredlock/goredlock/redlock"
)

// contend has each client's goroutines take name, hold it for hold and
// release it, until ctx ends; it counts grants and overlaps (two holders
// at once, or one past its Until), and returns how long each Acquire that
// failed had waited.
func contend(ctx context.Context, clients []*redlock.Client, perClient int, name string, hold time.Duration) (grants, overlaps int64, failed []time.Duration) {
	var (
		holders, g, o atomic.Int64
		mu            sync.Mutex
		wg            sync.WaitGroup
	)
	for _, c := range clients {
		for range perClient {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for ctx.Err() == nil {
					began := time.Now()
					l, err := c.Acquire(ctx, name, 10*time.Second)
					if err != nil {
						if ctx.Err() == nil {
							mu.Lock()
							failed = append(failed, time.Since(began))
							mu.Unlock()
						}
						continue
					}
					if holders.Add(1) > 1 {
						o.Add(1)
					}
					g.Add(1)
					time.Sleep(hold)
					if time.Now().After(l.Until()) {
						o.Add(1)
					}
					holders.Add(-1)
					l.Release(context.Background()) //nolint:errcheck // a failed release runs out with its TTL
				}
			}()
		}
	}
	wg.Wait()
	return g.Load(), o.Load(), failed
}

// TestRedisEightClientsDoNotGiveUpEarly: eight clients (as eight processes
// would be) with default options share one lock held 1 ms at a time, for
// 4 s; a call that gives up has waited at least its patience, 10 × 200 ms
// less the jitter: a second. Served in line, none should give up at all.
func TestRedisEightClientsDoNotGiveUpEarly(t *testing.T) {
	cluster := redistest.Start(t, 5)
	var clients []*redlock.Client
	for range 8 {
		clients = append(clients, clientOn(t, cluster))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Second)
	defer cancel()
	grants, overlaps, failed := contend(ctx, clients, 1, "eight", time.Millisecond)
	t.Logf("8 clients, hold 1 ms, 4 s: %d grants, %d overlaps, %d calls gave up %v", grants, overlaps, len(failed), failed)
	assert.Zero(t, overlaps, "two holders at once")
	for _, w := range failed {
		assert.GreaterOrEqual(t, w, time.Second, "a call gave up before its patience was spent")
	}
	assert.Greater(t, grants, int64(100), "the lock stopped moving")
}

// TestRedisWaitersAreServedInCallOrder: waiters in three clients whose
// calls began 15 ms apart are granted the lock in that order, whatever
// order their requests reach the servers in. The lock is released once
// each of them was refused (a hook tells), so that a machine slow enough
// to let a waiter's first request land after the release cannot decide
// the order instead of the line.
func TestRedisWaitersAreServedInCallOrder(t *testing.T) {
	cluster := redistest.Start(t, 5)
	holder := clientOn(t, cluster)
	ctx := context.Background()
	refused := make(chan struct{}, 3)
	hooks := redlock.Hooks{Attempt: func(_ context.Context, a redlock.Attempt) {
		if a.Number == 1 && !a.OK {
			refused <- struct{}{}
		}
	}}
	for round := range 5 {
		name := fmt.Sprint("order-", round)
		l, err := holder.Acquire(ctx, name, 10*time.Second)
		require.NoError(t, err)
		var (
			mu    sync.Mutex
			order []int
			wg    sync.WaitGroup
		)
		for i := range 3 {
			c := clientOn(t, cluster, redlock.WithRetryDelay(time.Minute), redlock.WithHooks(hooks))
			wg.Add(1)
			go func() {
				defer wg.Done()
				w, err := c.Acquire(ctx, name, 10*time.Second)
				if !assert.NoError(t, err) {
					return
				}
				mu.Lock()
				order = append(order, i)
				mu.Unlock()
				assert.NoError(t, w.Release(ctx))
			}()
			time.Sleep(15 * time.Millisecond)
		}
		for range 3 {
			<-refused
		}
		require.NoError(t, l.Release(ctx))
		wg.Wait()
		assert.Equal(t, []int{0, 1, 2}, order, "round %d: the order of the grants", round)
	}
}

// TestRedisLeaversStopBlocking: a waiter whose context ends, and one whose
// process vanished without leaving (its key servers closed under it), stop
// blocking the waiter behind them: it is granted the lock within about a
// second of the release.
func TestRedisLeaversStopBlocking(t *testing.T) {
	cluster := redistest.Start(t, 3)
	holder := clientOn(t, cluster)
	ctx := context.Background()
	l, err := holder.Acquire(ctx, "leavers", 10*time.Second)
	require.NoError(t, err)

	cctx, cancel := context.WithCancel(ctx)
	leaver := clientOn(t, cluster, redlock.WithRetryCount(-1))
	left := make(chan error, 1)
	go func() { _, err := leaver.Acquire(cctx, "leavers", 10*time.Second); left <- err }()
	time.Sleep(15 * time.Millisecond)

	// A process that crashes while it waits: its connections go, and
	// nobody takes its places out of the lines.
	var ghostServers []*redis.Server
	var ks []keyserver.KeyServer
	for _, u := range cluster.URLs("") {
		s, err := redis.FromURL(u)
		require.NoError(t, err)
		ghostServers = append(ghostServers, s)
		ks = append(ks, s)
	}
	ghost, err := redlock.New(ks, redlock.WithRetryCount(-1))
	require.NoError(t, err)
	gone := make(chan struct{})
	go func() { defer close(gone); ghost.Acquire(cctx, "leavers", 10*time.Second) }() //nolint:errcheck // it dies waiting
	time.Sleep(15 * time.Millisecond)

	next := clientOn(t, cluster, redlock.WithRetryDelay(time.Minute))
	granted := make(chan time.Time, 1)
	go func() {
		w, err := next.Acquire(ctx, "leavers", 10*time.Second)
		if assert.NoError(t, err) {
			granted <- time.Now()
			assert.NoError(t, w.Release(ctx))
		}
		close(granted)
	}()
	time.Sleep(15 * time.Millisecond)

	for _, s := range ghostServers {
		s.Close() // the crash
	}
	cancel() // the leaver gives up, and so does what is left of the ghost
	require.ErrorIs(t, <-left, context.Canceled)
	<-gone
	ghost.Close()
	released := time.Now()
	require.NoError(t, l.Release(ctx))
	at, ok := <-granted
	require.True(t, ok, "the next waiter was not granted the lock")
	<-granted // closed once its release returned, before the cleanup closes its client
	took := at.Sub(released)
	t.Logf("granted %v after the release, with a leaver and a vanished waiter ahead", took)
	assert.Less(t, took, 1500*time.Millisecond, "the waiters ahead blocked the next one")
}

// TestRedisNodeRestartedEmptyDuringContention: a node that restarts empty,
// losing its keys and its lines, costs order, never exclusion.
func TestRedisNodeRestartedEmptyDuringContention(t *testing.T) {
	cluster := redistest.Start(t, 5)
	var clients []*redlock.Client
	for range 4 {
		clients = append(clients, clientOn(t, cluster, redlock.WithRetryCount(-1)))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	restarted := make(chan struct{})
	go func() {
		defer close(restarted)
		time.Sleep(time.Second)
		cluster.Nodes[2].Restart()
	}()
	grants, overlaps, _ := contend(ctx, clients, 4, "restart", 200*time.Microsecond)
	<-restarted
	t.Logf("%d grants, %d overlaps, a node restarted empty after 1 s", grants, overlaps)
	assert.Zero(t, overlaps, "two holders at once")
	assert.Greater(t, grants, int64(100), "the lock stopped moving")
}
