package redlock_test

import (
	"context"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goredlock/goredlock/internal/redistest"
	"github.com/goredlock/goredlock/redlock"
)

// TestRedisHandOverCommandsPerGrant: 64 goroutines of one Client on one
// key over 5 nodes, each releasing the lock as soon as it is granted. With
// hand-over the lock passes from goroutine to goroutine in the process, and
// the servers see a grant and a release per chain of passes: at most 5
// Redis commands a grant on average (about 50 without; the figure
// was 53), and more grants a second. Both runs are logged side by side.
func TestRedisHandOverCommandsPerGrant(t *testing.T) {
	cluster := redistest.Start(t, 5)
	type result struct {
		grants, commands int
		took, p99        time.Duration
		byCommand        map[string]int // over every node
	}
	run := func(opts ...redlock.ClientOption) result {
		ctx := context.Background()
		c := clientOn(t, cluster, opts...)
		warm, err := c.Acquire(ctx, "cohort", 10*time.Second)
		require.NoError(t, err)
		require.NoError(t, warm.Release(ctx))
		redlock.Settle(c) // the warm-up's calls to a node slower than the quorum have landed
		for _, n := range cluster.Nodes {
			n.MustDo("CONFIG", "RESETSTAT")
		}
		var (
			mu     sync.Mutex
			waits  []time.Duration
			wg     sync.WaitGroup
			failed int
		)
		began := time.Now()
		stop := began.Add(time.Second)
		for range 64 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				var mine []time.Duration
				for time.Now().Before(stop) {
					asked := time.Now()
					l, err := c.Acquire(ctx, "cohort", 10*time.Second)
					if err != nil {
						mu.Lock()
						failed++
						mu.Unlock()
						continue
					}
					mine = append(mine, time.Since(asked))
					if err := l.Release(ctx); err != nil {
						t.Errorf("release: %v", err)
					}
				}
				mu.Lock()
				waits = append(waits, mine...)
				mu.Unlock()
			}()
		}
		wg.Wait()
		took := time.Since(began)
		require.NoError(t, c.Close()) // what it left running has landed
		r := result{grants: len(waits), took: took, byCommand: map[string]int{}}
		for _, n := range cluster.Nodes {
			total, byCommand := commandsRun(n)
			r.commands += total
			for cmd, k := range byCommand {
				r.byCommand[cmd] += k
			}
		}
		sort.Slice(waits, func(i, j int) bool { return waits[i] < waits[j] })
		if len(waits) > 0 {
			r.p99 = waits[len(waits)*99/100]
		}
		assert.Zero(t, failed, "calls that gave up")
		return r
	}
	off := run(redlock.WithHandOver(redlock.NoHandOver))
	on := run()
	for _, x := range []struct {
		name string
		r    result
	}{{"hand-over off", off}, {"hand-over on ", on}} {
		t.Logf("%s: %6d grants in %v (%7.0f/s), %6.2f Redis commands a grant over 5 nodes, p99 wait %v; commands: %v", x.name,
			x.r.grants, x.r.took.Round(time.Millisecond), float64(x.r.grants)/x.r.took.Seconds(),
			float64(x.r.commands)/float64(max(x.r.grants, 1)), x.r.p99.Round(10*time.Microsecond), x.r.byCommand)
	}
	require.NotZero(t, on.grants)
	assert.LessOrEqual(t, float64(on.commands)/float64(on.grants), 5.0, "Redis commands a grant with hand-over")
	assert.Greater(t, on.grants, 2*off.grants, "grants with hand-over against without")
}
