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
	"github.com/goredlock/goredlock/redlock"
)

// TestRedisSemaphoreWithPausedNodes: three permits, twelve goroutines in
// three clients on five real Redis nodes, two of which are paused and
// resumed in turn: never more than three hold a permit at once, and three
// do hold at once.
func TestRedisSemaphoreWithPausedNodes(t *testing.T) {
	cluster := redistest.Start(t, 5)
	const permits = 3
	var clients []*redlock.Client
	for range 3 {
		clients = append(clients, clientOn(t, cluster, redlock.WithRetryCount(-1), redlock.WithServerTimeout(100*time.Millisecond)))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Second)
	defer cancel()
	var (
		holding, most, grants atomic.Int32
		wg                    sync.WaitGroup
	)
	for g := range 12 {
		sem := clients[g%3].Semaphore("sem", permits)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				l, err := sem.Acquire(ctx, 2*time.Second)
				if err != nil {
					if ctx.Err() == nil {
						t.Errorf("Acquire: %v", err)
					}
					return
				}
				n := holding.Add(1)
				for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
				}
				grants.Add(1)
				time.Sleep(20 * time.Millisecond)
				holding.Add(-1)
				l.Release(context.Background()) //nolint:errcheck // a paused node may miss it; the TTL covers it
			}
		}()
	}
	for _, pair := range [][2]int{{0, 1}, {3, 4}} {
		time.Sleep(500 * time.Millisecond)
		cluster.Nodes[pair[0]].Pause()
		cluster.Nodes[pair[1]].Pause()
		time.Sleep(700 * time.Millisecond)
		cluster.Nodes[pair[0]].Resume()
		cluster.Nodes[pair[1]].Resume()
	}
	wg.Wait()
	t.Logf("%d permits granted, at most %d held at once", grants.Load(), most.Load())
	assert.LessOrEqual(t, most.Load(), int32(permits), "more holders than permits")
	assert.Equal(t, int32(permits), most.Load(), "the permits were never all in use")
}

// TestRedisRWMutex: readers in two clients overlap, never with a writer,
// and a writer in a third client gets the lock within two seconds against
// eight readers that keep taking it again.
func TestRedisRWMutex(t *testing.T) {
	cluster := redistest.Start(t, 3)
	var clients []*redlock.Client
	for range 3 {
		clients = append(clients, clientOn(t, cluster, redlock.WithRetryCount(-1)))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Second)
	defer cancel()
	var (
		readers, writers, mostReaders atomic.Int32
		overlap                       atomic.Bool
		wg                            sync.WaitGroup
	)
	stopReading := make(chan struct{})
	for r := range 8 {
		rw := clients[r%2].RWMutex("catalogue")
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stopReading:
					return
				default:
				}
				err := rw.RDo(ctx, 2*time.Second, func(context.Context) error {
					n := readers.Add(1)
					defer readers.Add(-1)
					for m := mostReaders.Load(); n > m && !mostReaders.CompareAndSwap(m, n); m = mostReaders.Load() {
					}
					if writers.Load() > 0 {
						overlap.Store(true)
					}
					time.Sleep(30 * time.Millisecond)
					return nil
				})
				if err != nil {
					t.Errorf("RDo: %v", err)
					return
				}
			}
		}()
	}
	time.Sleep(300 * time.Millisecond) // the readers hold in turn
	asked := time.Now()
	var waited time.Duration
	err := clients[2].RWMutex("catalogue").Do(ctx, 2*time.Second, func(context.Context) error {
		waited = time.Since(asked)
		writers.Add(1)
		defer writers.Add(-1)
		if readers.Load() > 0 {
			overlap.Store(true)
		}
		time.Sleep(50 * time.Millisecond)
		return nil
	})
	close(stopReading)
	wg.Wait()
	require.NoError(t, err)
	t.Logf("writer waited %v; at most %d readers at once", waited, mostReaders.Load())
	assert.False(t, overlap.Load(), "a writer held the lock with a reader")
	assert.GreaterOrEqual(t, mostReaders.Load(), int32(4), "readers did not overlap")
	assert.Less(t, waited, 2*time.Second, "readers starved the writer")
}

// TestRedisElection: four campaigners in four clients; one leads at a
// time, another client's Leader and Observe report its value, the next
// leads soon after a resignation, a leadership outlives its TTL, and it
// is lost (Done closes) when a majority of nodes is paused.
func TestRedisElection(t *testing.T) {
	cluster := redistest.Start(t, 3)
	const ttl = 500 * time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	observer := clientOn(t, cluster)
	changes := observer.Election("sched").Observe(ctx)
	require.Equal(t, "", <-changes, "the first value Observe sends when nobody leads")

	type lead struct {
		value string
		l     *redlock.Lock
	}
	leads := make(chan lead, 4)
	var leading atomic.Int32
	for i := range 4 {
		c := clientOn(t, cluster)
		value := fmt.Sprint("replica-", i)
		go func() {
			l, err := c.Election("sched").Campaign(ctx, ttl, value)
			if err != nil {
				if ctx.Err() == nil {
					t.Errorf("Campaign(%s): %v", value, err)
				}
				return
			}
			if leading.Add(1) > 1 {
				t.Errorf("%s leads with another", value)
			}
			leads <- lead{value, l}
		}()
	}

	first := <-leads
	assert.Equal(t, first.value, nextValue(t, changes), "Observe reports the leader")
	got, err := observer.Election("sched").Leader(ctx)
	require.NoError(t, err)
	assert.Equal(t, first.value, got)
	time.Sleep(3 * ttl) // kept alive past its TTL
	got, err = observer.Election("sched").Leader(ctx)
	require.NoError(t, err)
	assert.Equal(t, first.value, got, "the leadership did not outlive its TTL")

	resigned := time.Now()
	leading.Add(-1)
	require.NoError(t, first.l.Release(ctx))
	second := <-leads
	took := time.Since(resigned)
	t.Logf("the next leader led %v after a resignation", took)
	assert.Less(t, took, 500*time.Millisecond, "the next leader after a resignation")
	for v := nextValue(t, changes); v != second.value; v = nextValue(t, changes) {
		assert.Contains(t, []string{"", first.value}, v, "Observe sent a value that never led")
	}

	cluster.Nodes[0].Pause()
	cluster.Nodes[1].Pause()
	select {
	case <-second.l.Done():
		assert.ErrorIs(t, second.l.Err(), redlock.ErrLockLost)
	case <-time.After(5 * ttl):
		t.Error("the leadership was not lost with a majority of nodes paused")
	}
	leading.Add(-1)
	cluster.Nodes[0].Resume()
	cluster.Nodes[1].Resume()
	cancel() // the other campaigners resign
}

// nextValue returns the next value Observe sends, failing the test after
// a few seconds.
func nextValue(t *testing.T, changes <-chan string) string {
	t.Helper()
	select {
	case v, ok := <-changes:
		require.True(t, ok, "Observe's channel closed")
		return v
	case <-time.After(5 * time.Second):
		t.Fatal("no change reported")
		return ""
	}
}
