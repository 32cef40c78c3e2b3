package redlock_test

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goredlock/goredlock/internal/redistest"
	"github.com/goredlock/goredlock/keyserver"
	"github.com/goredlock/goredlock/redlock"
)

// TestRedisFencesIncreaseWithPausedMinorities takes one name over and
// over on five real nodes while a random minority is paused for each
// grant, and restarts a node empty now and then (its counters are lost;
// one server losing them must not make tokens go backwards).
// The quarantine is off: it would refuse the grants while a restarted
// node and two paused ones leave no quorum, and the test is of the
// counters with nodes restarted at once.
func TestRedisFencesIncreaseWithPausedMinorities(t *testing.T) {
	c, cluster := redisClient(t, 5, redlock.WithFencing(), redlock.WithServerTimeout(100*time.Millisecond),
		redlock.WithRetryCount(5), redlock.WithRetryDelay(10*time.Millisecond), redlock.WithQuarantine(redlock.NoQuarantine))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var last uint64
	for grant := 0; grant < 120; grant++ {
		paused := rand.Perm(5)[:rand.IntN(3)]
		for _, i := range paused {
			cluster.Nodes[i].Pause()
		}
		l, err := c.Acquire(ctx, "ledger", 10*time.Second)
		for _, i := range paused {
			cluster.Nodes[i].Resume()
		}
		require.NoError(t, err, "grant %d with nodes %v paused", grant, paused)
		require.Greater(t, l.Fence(), last, "grant %d with nodes %v paused", grant, paused)
		last = l.Fence()
		require.NoError(t, l.Release(ctx))
		if grant%30 == 29 {
			cluster.Nodes[rand.IntN(5)].Restart() // empty: its counter is gone
		}
	}
}

// TestRedisCheckFence: on three real nodes, the newest grant's fence is
// current and an older one is not; with one node stopped the quorum still
// answers, with two CheckFence fails.
// TestRedisFencedSemaphoreLogsNoWarning: 8 goroutines × 20 Do on a
// fenced semaphore of 3 permits over 5 healthy Redis nodes (a TTL of 10 s,
// so that a loaded machine's race detector stays within the server
// timeout), twice (with a
// permit count that differs in between): every hold gets a distinct
// fence, and the log has no warning. Permits drawing their fences at once
// used to log "fencing token not written to a quorum" once or twice a
// run, and the other count "key server failing" five times.
func TestRedisFencedSemaphoreLogsNoWarning(t *testing.T) {
	var log syncBuffer
	c, _ := redisClient(t, 5, redlock.WithFencing(),
		redlock.WithLogger(slog.New(slog.NewTextHandler(&log, &slog.HandlerOptions{Level: slog.LevelInfo}))))
	sem := c.Semaphore("encoders", 3)
	run := func() {
		t.Helper()
		var mu sync.Mutex
		fences := make(map[uint64]bool)
		var wg sync.WaitGroup
		for range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range 20 {
					err := sem.Do(context.Background(), 10*time.Second, func(ctx context.Context) error {
						l, _ := redlock.LockFromContext(ctx)
						mu.Lock()
						fences[l.Fence()] = true
						mu.Unlock()
						time.Sleep(time.Millisecond)
						return nil
					})
					assert.NoError(t, err)
				}
			}()
		}
		wg.Wait()
		assert.Len(t, fences, 8*20, "a distinct fence per hold")
	}
	run()
	p, err := sem.Acquire(context.Background(), 10*time.Second)
	require.NoError(t, err)
	_, err = c.Semaphore("encoders", 4).TryAcquire(context.Background(), 10*time.Second)
	require.ErrorIs(t, err, keyserver.ErrPermitsDiffer)
	require.NoError(t, p.Release(context.Background()))
	run()
	assert.NotContains(t, log.String(), "level=WARN")
}

// syncBuffer is a strings.Builder safe for concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestRedisCheckFence(t *testing.T) {
	c, cluster := redisClient(t, 3, redlock.WithFencing(), redlock.WithServerTimeout(200*time.Millisecond))
	ctx := context.Background()
	first, err := c.TryAcquire(ctx, "ledger", 10*time.Second)
	require.NoError(t, err)
	require.NoError(t, first.Release(ctx))
	current, err := c.CheckFence(ctx, "ledger", first.Fence())
	require.NoError(t, err)
	require.True(t, current)
	second, err := c.TryAcquire(ctx, "ledger", 10*time.Second)
	require.NoError(t, err)
	defer second.Release(ctx)
	current, err = c.CheckFence(ctx, "ledger", first.Fence())
	require.NoError(t, err)
	require.False(t, current, "fence %d was drawn after %d", second.Fence(), first.Fence())

	cluster.Nodes[0].Pause()
	defer cluster.Nodes[0].Resume()
	current, err = c.CheckFence(ctx, "ledger", second.Fence())
	require.NoError(t, err)
	require.True(t, current)
	cluster.Nodes[1].Pause()
	defer cluster.Nodes[1].Resume()
	_, err = c.CheckFence(ctx, "ledger", second.Fence())
	var qe *redlock.QuorumError
	require.ErrorAs(t, err, &qe, "two of three nodes paused")
}

// BenchmarkRedisFencedAcquire compares the latency of a fenced and an
// unfenced Acquire on five local nodes, run side by side; it reports the
// medians as p50-µs.
func BenchmarkRedisFencedAcquire(b *testing.B) {
	cluster := redistest.Start(b, 5)
	for _, fenced := range []bool{false, true} {
		name := "unfenced"
		var opts []redlock.ClientOption
		if fenced {
			name, opts = "fenced", []redlock.ClientOption{redlock.WithFencing()}
		}
		b.Run(name, func(b *testing.B) { lockUnlockTimed(b, clientOn(b, cluster, opts...)) })
	}
}

// lockUnlockTimed takes and releases the lock "bench" on c b.N times, one
// call at a time, timed, and reports the median Acquire as p50-µs.
func lockUnlockTimed(b *testing.B, c *redlock.Client) {
	ctx := context.Background()
	took := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		took = append(took, lockUnlockOnce(ctx, b, c))
	}
	b.StopTimer()
	b.ReportMetric(p50(took), "p50-µs")
}

// lockUnlockOnce takes and releases one lock on c, and returns how long
// taking it took.
func lockUnlockOnce(ctx context.Context, b *testing.B, c *redlock.Client) time.Duration {
	start := time.Now()
	l, err := c.Acquire(ctx, "bench", 10*time.Second)
	took := time.Since(start)
	if err != nil {
		b.Fatal(err)
	}
	if err := l.Release(ctx); err != nil {
		b.Fatal(err)
	}
	return took
}

// p50 is the median of took, in microseconds; it sorts took.
func p50(took []time.Duration) float64 {
	slices.Sort(took)
	return float64(took[len(took)/2].Nanoseconds()) / 1e3
}

// BenchmarkRedisParallel takes and releases locks on distinct names from
// 64 goroutines on five local nodes: the client's cost under load.
func BenchmarkRedisParallel(b *testing.B) {
	var next atomic.Int64
	benchmarkRedis(b, func() string { return fmt.Sprint("bench-", next.Add(1)) })
}

// BenchmarkRedisOneKey is 64 goroutines taking turns on one lock on five
// local Redis nodes: the contended path (the line, the hand-over).
func BenchmarkRedisOneKey(b *testing.B) {
	benchmarkRedis(b, func() string { return "bench-one" }, redlock.WithRetryCount(-1))
}

// benchmarkRedis runs lock+unlock on 64 goroutines over five local Redis
// nodes, each goroutine on the lock named by name().
func benchmarkRedis(b *testing.B, name func() string, opts ...redlock.Option) {
	lockUnlockParallel(b, clientOn(b, redistest.Start(b, 5)), name, opts...)
}

// lockUnlockParallel runs lock+unlock on c from 64 goroutines, each on the
// lock named by name().
func lockUnlockParallel(b *testing.B, c *redlock.Client, name func() string, opts ...redlock.Option) {
	holdParallel(b, func() func(context.Context) (*redlock.Lock, error) {
		name := name()
		return func(ctx context.Context) (*redlock.Lock, error) { return c.Acquire(ctx, name, 10*time.Second, opts...) }
	})
}

// holdParallel takes and releases a hold from 64 goroutines, each with
// the take that newTake returns it.
func holdParallel(b *testing.B, newTake func() func(context.Context) (*redlock.Lock, error)) {
	b.SetParallelism(32) // × GOMAXPROCS 2 = 64 goroutines
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		take := newTake()
		ctx := context.Background()
		for pb.Next() {
			l, err := take(ctx)
			if err != nil {
				b.Error(err)
				return
			}
			if err := l.Release(ctx); err != nil {
				b.Error(err)
				return
			}
		}
	})
}
