package redlock_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goredlock/goredlock/internal/layout"
	"github.com/goredlock/goredlock/internal/redistest"
	"github.com/goredlock/goredlock/redlock"
)

// TestRedisPatienceHoldsWhenReleasesFail: a holder whose release script
// fails on every server (its ACL user may touch the lock's key, which the
// SET NX of its grant needs, but not the line's, which the script
// declares) leaves its key for its TTL (a minute); a waiter gives up
// within its patience (about a second at the defaults) and a server
// timeout, and one with a deadline returns by it.
func TestRedisPatienceHoldsWhenReleasesFail(t *testing.T) {
	ctx := context.Background()
	cluster := redistest.Start(t, 3)
	var urls []string
	for _, n := range cluster.Nodes {
		n.MustDo("ACL", "SETUSER", "holder", "on", ">pw", "~k", "~"+layout.IncarnationKey, "+@all")
		urls = append(urls, "redis://holder:pw@"+n.Addr())
	}
	holder, err := redlock.New(serversAt(t, urls))
	require.NoError(t, err)
	defer holder.Close()
	waiter := clientOn(t, cluster)

	held, err := holder.TryAcquire(ctx, "k", time.Minute)
	require.NoError(t, err)
	go func() {
		time.Sleep(100 * time.Millisecond)
		err := held.Release(ctx)
		assert.ErrorContains(t, err, "NOPERM", "the release script is refused")
	}()
	began := time.Now()
	_, err = waiter.Acquire(ctx, "k", time.Minute)
	require.ErrorIs(t, err, redlock.ErrNotAcquired)
	assert.Less(t, time.Since(began), 10*time.Second, "gave up within its patience, not the holder's TTL of a minute")

	dctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	began = time.Now()
	_, err = waiter.Acquire(dctx, "k", time.Minute, redlock.WithRetryCount(-1))
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Less(t, time.Since(began), 5*time.Second, "the caller's deadline is honoured")
}
