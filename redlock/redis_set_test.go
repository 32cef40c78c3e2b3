package redlock_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goredlock/goredlock/redlock"
)

// TestRedisAcquireAll: on three real nodes a set is taken whole or not at
// all, a waiter in one name's line is handed that name by the set's
// release, and Clients taking overlapping sets in opposite orders all get
// through without two holding a name at once.
func TestRedisAcquireAll(t *testing.T) {
	c, cluster := redisClient(t, 3, redlock.WithFencing())
	other := clientOn(t, cluster)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	b, err := other.TryAcquire(ctx, "b", 10*time.Second)
	require.NoError(t, err)
	_, err = c.TryAcquireAll(ctx, []string{"a", "b"}, 10*time.Second)
	require.ErrorIs(t, err, redlock.ErrHeldElsewhere)
	// A refusal returns at a quorum: a slow node's grant of the set is
	// undone in the background (a loaded .ci/run found a there).
	redlock.Settle(c)
	for _, n := range cluster.Nodes {
		assert.Equal(t, int64(0), n.MustDo("EXISTS", "a"), "a was not taken by the refused set")
	}
	require.NoError(t, b.Release(ctx))

	set, err := c.TryAcquireAll(ctx, []string{"a", "b"}, 10*time.Second)
	require.NoError(t, err)
	assert.Equal(t, uint64(1), set.FenceOf("a"))
	assert.Equal(t, uint64(1), set.FenceOf("b"), "other's grant of b drew no fence")
	waited := make(chan error, 1)
	go func() {
		l, err := other.Acquire(ctx, "b", 10*time.Second, redlock.WithRetryCount(-1))
		if err == nil {
			err = l.Release(ctx)
		}
		waited <- err
	}()
	time.Sleep(50 * time.Millisecond) // the waiter joins b's line
	require.NoError(t, set.Release(ctx))
	require.NoError(t, <-waited, "the waiter in b's line got it")

	var holders [3]atomic.Int32
	var wg sync.WaitGroup
	for i, names := range [][]string{{"a", "b"}, {"b", "a"}, {"b", "c"}, {"c", "a"}} {
		cl := clientOn(t, cluster, redlock.WithRetryDelay(5*time.Millisecond), redlock.WithRetryCount(-1))
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 10 {
				err := cl.DoAll(ctx, names, 10*time.Second, func(context.Context) error {
					for _, n := range names {
						if holders[n[0]-'a'].Add(1) != 1 {
							t.Errorf("client %d: %s held twice", i, n)
						}
					}
					for _, n := range names {
						holders[n[0]-'a'].Add(-1)
					}
					return nil
				})
				if err != nil {
					t.Errorf("client %d: %v", i, err)
					return
				}
			}
		}()
	}
	wg.Wait()
}
