package redlock_test

import (
	"context"
	"fmt"
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

// waiter is one call of an ordering test: a set of names, or one name
// taken with Acquire.
type waiter struct {
	names []string
	lock  bool
}

// grantOrder has a holder take every name on every node (its server
// timeout must allow for a loaded machine), starts each waiter's call on
// a Client of its own 15 ms after the one before (and once the one before
// waits in its names' lines on cluster: a goroutine started late ranks
// late), lets go once all wait, and returns the order in which the
// waiters were granted, each holding its names 20 ms.
func grantOrder(t *testing.T, ctx context.Context, cluster *redistest.Cluster, holder *redlock.Client, clients []*redlock.Client, all []string, waiters []waiter) []int {
	t.Helper()
	h, err := holder.AcquireAll(ctx, all, 10*time.Second)
	require.NoError(t, err)
	// A grant needs two of the three nodes; the order needs all three, or
	// the first waiter is granted on the third and waits in no line there.
	require.Eventually(t, func() bool {
		for _, node := range cluster.Nodes {
			if n, err := node.Do("EXISTS", toAny(all)...); err != nil || n.(int64) != int64(len(all)) {
				return false
			}
		}
		return true
	}, 10*time.Second, time.Millisecond, "the holder's names on every node")
	var (
		mu    sync.Mutex
		order []int
		wg    sync.WaitGroup
	)
	for i, w := range waiters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var l *redlock.Lock
			var err error
			if w.lock {
				l, err = clients[i].Acquire(ctx, w.names[0], 10*time.Second)
			} else {
				l, err = clients[i].AcquireAll(ctx, w.names, 10*time.Second)
			}
			if !assert.NoError(t, err, "waiter %d", i) {
				return
			}
			mu.Lock()
			order = append(order, i)
			mu.Unlock()
			time.Sleep(20 * time.Millisecond)
			assert.NoError(t, l.Release(ctx))
		}()
		time.Sleep(15 * time.Millisecond)
		for _, n := range w.names {
			ahead := 0 // the waiters so far in n's line, this one included
			for _, v := range waiters[:i+1] {
				if slices.Contains(v.names, n) {
					ahead++
				}
			}
			inLine(t, cluster, "{"+n+"}:line", ahead)
		}
	}
	time.Sleep(50 * time.Millisecond)
	require.NoError(t, h.Release(ctx))
	wg.Wait()
	return order
}

// TestRedisSetsWaitInLine: on three real nodes, sets of three Clients
// that overlap pairwise ({a,b}, {b,c}, {a,c}), begun 15 ms apart while
// another holds all three names, are granted in the order they began,
// round after round: each waits in its names' lines, and a release
// promises a name to the earliest waiter.
func TestRedisSetsWaitInLine(t *testing.T) {
	cluster := redistest.Start(t, 3)
	holder := clientOn(t, cluster, redlock.WithServerTimeout(2*time.Second))
	clients := []*redlock.Client{clientOn(t, cluster), clientOn(t, cluster), clientOn(t, cluster)}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for round := range 5 {
		a, b, c := fmt.Sprintf("a%d", round), fmt.Sprintf("b%d", round), fmt.Sprintf("c%d", round)
		order := grantOrder(t, ctx, cluster, holder, clients, []string{a, b, c},
			[]waiter{{names: []string{a, b}}, {names: []string{b, c}}, {names: []string{a, c}}})
		assert.Equal(t, []int{0, 1, 2}, order, "round %d: the order of the grants", round)
	}
}

// TestRedisLockAndSetWaitersInterleave: a lock's waiters and a set's
// share the names' lines, and are served in rank order between them: a
// lock of a, then a set of a and b, then a lock of b, begun in that order
// while another holds a and b, are granted in that order.
func TestRedisLockAndSetWaitersInterleave(t *testing.T) {
	cluster := redistest.Start(t, 3)
	holder := clientOn(t, cluster, redlock.WithServerTimeout(2*time.Second))
	clients := []*redlock.Client{clientOn(t, cluster), clientOn(t, cluster), clientOn(t, cluster)}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for round := range 3 {
		a, b := fmt.Sprintf("a%d", round), fmt.Sprintf("b%d", round)
		order := grantOrder(t, ctx, cluster, holder, clients, []string{a, b},
			[]waiter{{names: []string{a}, lock: true}, {names: []string{a, b}}, {names: []string{b}, lock: true}})
		assert.Equal(t, []int{0, 1, 2}, order, "round %d: the order of the grants", round)
	}
}

// TestRedisOppositeSetsProgress: two Clients take the same two names as
// sets named in opposite orders, over and over, on three real nodes:
// neither deadlocks, and both keep being granted.
func TestRedisOppositeSetsProgress(t *testing.T) {
	cluster := redistest.Start(t, 3)
	run := 2 * time.Second
	end := time.Now().Add(run)
	var (
		wg      sync.WaitGroup
		granted [2]atomic.Int64
		held    atomic.Int32
	)
	for i, names := range [][]string{{"x", "y"}, {"y", "x"}} {
		c := clientOn(t, cluster, redlock.WithRetryCount(-1))
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(end) {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				l, err := c.AcquireAll(ctx, names, 10*time.Second)
				if !assert.NoError(t, err, "client %d", i) {
					cancel()
					return
				}
				assert.Equal(t, int32(1), held.Add(1), "both sets held at once")
				time.Sleep(time.Millisecond)
				held.Add(-1)
				assert.NoError(t, l.Release(ctx))
				cancel()
				granted[i].Add(1)
			}
		}()
	}
	wg.Wait()
	t.Logf("granted %d and %d times in %v", granted[0].Load(), granted[1].Load(), run)
	assert.Greater(t, granted[0].Load(), int64(20))
	assert.Greater(t, granted[1].Load(), int64(20))
}

// toAny is ss as the arguments of a command.
func toAny(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}
