package redlock_test

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goredlock/goredlock/internal/redistest"
	"github.com/goredlock/goredlock/redlock"
)

// TestRedisFencedWaitersWaitInLine is issue 45's first promise: a fenced
// client's waiter stands in the servers' lines like an unfenced one, so
// the holder's Contended closes, Inspect counts it, and it is granted on
// the release with a greater fence.
func TestRedisFencedWaitersWaitInLine(t *testing.T) {
	ctx := context.Background()
	cluster := redistest.Start(t, 3)
	holder := clientOn(t, cluster, redlock.WithFencing())
	waiter := clientOn(t, cluster, redlock.WithFencing())

	l, err := holder.Acquire(ctx, "job", 10*time.Second)
	require.NoError(t, err)
	type result struct {
		l   *redlock.Lock
		err error
	}
	got := make(chan result, 1)
	arrived := time.Now()
	go func() {
		w, err := waiter.Acquire(ctx, "job", 10*time.Second, redlock.WithRetryCount(-1))
		got <- result{w, err}
	}()
	select {
	case <-l.Contended():
		t.Logf("Contended closed %v after the fenced waiter began", time.Since(arrived).Round(time.Millisecond))
	case <-time.After(5 * time.Second):
		t.Fatal("Contended never closed for a fenced waiter")
	}
	st, err := holder.Inspect(ctx, "job")
	require.NoError(t, err)
	assert.Equal(t, 1, st.Waiters, "Inspect counts the fenced waiter")

	released := time.Now()
	require.NoError(t, l.Release(ctx))
	r := <-got
	require.NoError(t, r.err)
	t.Logf("granted %v after the release", time.Since(released).Round(time.Millisecond))
	assert.Greater(t, r.l.Fence(), l.Fence())
	require.NoError(t, r.l.Release(ctx))
}

// TestRedisFencedClientsShareFairly: 8 fenced Clients × 8 goroutines on
// one key over 5 nodes, each holding it 1 ms: no caller gives up, the
// Clients get their fair share (Jain's index ≥ 0.95), and every holder's
// fence is greater than the one before.
func TestRedisFencedClientsShareFairly(t *testing.T) {
	ctx := context.Background()
	cluster := redistest.Start(t, 5)
	const clients, each = 8, 8
	run := 3 * time.Second
	var (
		mu      sync.Mutex
		grants  = make([]int, clients)
		fences  []uint64
		gaveUp  int
		holding bool
		overlap int
	)
	stop := time.Now().Add(run)
	var wg sync.WaitGroup
	for c := range clients {
		cl := clientOn(t, cluster, redlock.WithFencing())
		for range each {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for time.Now().Before(stop) {
					l, err := cl.Acquire(ctx, "fair", 10*time.Second)
					if err != nil {
						mu.Lock()
						gaveUp++
						mu.Unlock()
						t.Errorf("client %d gave up: %v", c, err)
						return
					}
					mu.Lock()
					if holding {
						overlap++
					}
					holding = true
					grants[c]++
					fences = append(fences, l.Fence())
					mu.Unlock()
					time.Sleep(time.Millisecond)
					mu.Lock()
					holding = false
					mu.Unlock()
					if err := l.Release(ctx); err != nil {
						t.Errorf("release: %v", err)
					}
				}
			}()
		}
	}
	wg.Wait()
	assert.Zero(t, gaveUp)
	assert.Zero(t, overlap)
	for i := 1; i < len(fences); i++ {
		require.Greater(t, fences[i], fences[i-1], "fence %d after %d", i, i-1)
	}
	var sum, sq float64
	for _, g := range grants {
		sum += float64(g)
		sq += float64(g) * float64(g)
	}
	jain := sum * sum / (float64(clients) * sq)
	sorted := append([]int(nil), grants...)
	sort.Ints(sorted)
	t.Logf("%d grants in %v, per Client %v, Jain %.3f", int(sum), run, sorted, jain)
	assert.GreaterOrEqual(t, jain, 0.95, fmt.Sprint(grants))
}
