package redlock_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/goredlock/goredlock/internal/redistest"
	"github.com/goredlock/goredlock/redlock"
)

// TestRedisContendedPrimitivesTryOnce holds a contended permit (of a
// semaphore of one) and a write hold to the lock's standard: 64 goroutines
// over 8 Clients on one name, 5 nodes, each call is granted in about one
// attempt, as a lock's is. A call that looked at the servers before it
// waited, or tried on the first server's word and split the votes, took
// three attempts a grant (each refused attempt 5 scripts and 5 undos);
// the bound, two, is broken only by such a waste, not by a slow machine.
func TestRedisContendedPrimitivesTryOnce(t *testing.T) {
	cluster := redistest.Start(t, 5)
	for _, kind := range []string{"lock", "permit", "write"} {
		t.Run(kind, func(t *testing.T) {
			grants, attempts, gaveUp := contendOneName(t, cluster, kind, time.Second)
			per := float64(attempts) / float64(grants)
			t.Logf("%s: %d grants, %.2f attempts a grant, %d gave up", kind, grants, per, gaveUp)
			require.Zero(t, gaveUp, "calls gave up")
			require.Greater(t, grants, int64(64), "too few grants to judge")
			require.LessOrEqual(t, per, 2.0, "attempts a grant")
		})
	}
}

// contendOneName runs 64 goroutines over 8 Clients taking kind's hold of one name
// for d (and on until 65 grants), and counts the grants, every attempt (the Attempt hook's), and
// the calls that gave up.
func contendOneName(t *testing.T, cluster *redistest.Cluster, kind string, d time.Duration) (grants, attempts, gaveUp int64) {
	var tried, granted, failed atomic.Int64
	hooks := redlock.Hooks{Attempt: func(context.Context, redlock.Attempt) { tried.Add(1) }}
	var clients []*redlock.Client
	for range 8 {
		clients = append(clients, clientOn(t, cluster, redlock.WithHooks(hooks)))
	}
	name := "try-once-" + kind
	take := func(c *redlock.Client, ctx context.Context) (*redlock.Lock, error) {
		switch kind {
		case "permit":
			return c.Semaphore(name, 1).Acquire(ctx, 10*time.Second)
		case "write":
			return c.RWMutex(name).Lock(ctx, 10*time.Second)
		}
		return c.Acquire(ctx, name, 10*time.Second)
	}
	ctx := context.Background()
	// For d, and on until enough grants to judge (a loaded machine grants
	// fewer), 20 s at most.
	start := time.Now()
	more := func() bool {
		run := time.Since(start)
		return run < d || (granted.Load() <= 64 && run < 20*time.Second)
	}
	var wg sync.WaitGroup
	for g := range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := clients[g%8]
			for more() {
				l, err := take(c, ctx)
				if err != nil {
					failed.Add(1)
					continue
				}
				granted.Add(1)
				if err := l.Release(ctx); err != nil {
					t.Errorf("release: %v", err)
				}
			}
		}()
	}
	wg.Wait()
	return granted.Load(), tried.Load(), failed.Load()
}
