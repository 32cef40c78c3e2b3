package redlock_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goredlock/goredlock/internal/redistest"
	"github.com/goredlock/goredlock/redlock"
)

// TestRedisOverlappingSets: on five real nodes, 8 Clients take random
// overlapping pairs and triples of 6 names for a few seconds, each
// holding its set for 1 ms, with one node healthy throughout or paused
// from the first second on. No name is ever held by two at once; no call
// gives up (each may retry for 30 s, six times the run) and none hangs
// (every call returns before its context ends); and each name's fences,
// read in the order its holders got it, strictly increase.
func TestRedisOverlappingSets(t *testing.T) {
	run := 5 * time.Second
	if testing.Short() {
		run = 2 * time.Second
	}
	for _, pause := range []bool{false, true} {
		t.Run(fmt.Sprintf("paused=%v", pause), func(t *testing.T) {
			cluster := redistest.Start(t, 5)
			if pause {
				time.AfterFunc(time.Second, cluster.Nodes[4].Pause)
				t.Cleanup(cluster.Nodes[4].Resume)
			}
			overlappingSets(t, cluster, run, pause)
		})
	}
}

// overlappingSets is TestRedisOverlappingSets on cluster for run. With
// paused, a release may go unconfirmed: a set granted by the paused node
// and two others before the pause can be let go by two nodes only after
// it; such releases are counted, not failed.
func overlappingSets(t *testing.T, cluster *redistest.Cluster, run time.Duration, paused bool) {
	const (
		clients  = 8
		names    = 6
		patience = 30 * time.Second
	)
	var (
		holders  [names]atomic.Int32
		fenceMu  sync.Mutex
		fences   [names][]uint64 // per name, in the order its holders got it
		sets     atomic.Int64
		gaveUp   atomic.Int64
		released atomic.Int64 // releases not confirmed by a quorum
		overlaps atomic.Int64
		maxWait  atomic.Int64 // the longest AcquireAll, in nanoseconds
		wg       sync.WaitGroup
	)
	name := func(i int) string { return fmt.Sprintf("n%d", i) }
	end := time.Now().Add(run)
	for i := range clients {
		c := clientOn(t, cluster, redlock.WithFencing(),
			redlock.WithRetryDelay(5*time.Millisecond), redlock.WithRetryCount(-1))
		rng := rand.New(rand.NewPCG(uint64(i), 34))
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(end) {
				picked := rng.Perm(names)[:2+rng.IntN(2)] // a pair or a triple, in any order
				set := make([]string, len(picked))
				for j, p := range picked {
					set[j] = name(p)
				}
				ctx, cancel := context.WithTimeout(context.Background(), patience)
				began := time.Now()
				l, err := c.AcquireAll(ctx, set, 10*time.Second)
				for took := int64(time.Since(began)); ; {
					if m := maxWait.Load(); took <= m || maxWait.CompareAndSwap(m, took) {
						break
					}
				}
				if err != nil {
					cancel()
					gaveUp.Add(1)
					t.Errorf("client %d: AcquireAll(%v) gave up: %v", i, set, err)
					return
				}
				for _, p := range picked {
					if holders[p].Add(1) != 1 {
						overlaps.Add(1)
						t.Errorf("client %d: %s held twice", i, name(p))
					}
				}
				fenceMu.Lock()
				for _, p := range picked {
					fences[p] = append(fences[p], l.FenceOf(name(p)))
				}
				fenceMu.Unlock()
				time.Sleep(time.Millisecond)
				for _, p := range picked {
					holders[p].Add(-1)
				}
				if err := l.Release(ctx); err != nil {
					released.Add(1)
					if !paused {
						t.Errorf("client %d: Release(%v): %v", i, set, err)
					}
				}
				if ctx.Err() != nil {
					t.Errorf("client %d: the call of %v ran past its context", i, set)
				}
				cancel()
				sets.Add(1)
			}
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(run + patience + 10*time.Second):
		t.Fatal("calls still running long after every context ended: deadlock")
	}
	t.Logf("%d sets held in %v by %d clients, the longest AcquireAll %v; %d releases not confirmed",
		sets.Load(), run, clients, time.Duration(maxWait.Load()), released.Load())
	assert.Zero(t, gaveUp.Load(), "calls that gave up")
	assert.Zero(t, overlaps.Load(), "names held twice")
	require.Positive(t, sets.Load())
	for p, fs := range fences {
		assert.True(t, slices.IsSorted(fs) && !hasRepeat(fs), "fences of %s not strictly increasing: %v", name(p), fs)
		assert.NotContains(t, fs, uint64(0), "fences of %s", name(p))
	}
}

// hasRepeat reports whether a sorted slice holds a value twice.
func hasRepeat(fs []uint64) bool {
	for i := 1; i < len(fs); i++ {
		if fs[i] == fs[i-1] {
			return true
		}
	}
	return false
}
