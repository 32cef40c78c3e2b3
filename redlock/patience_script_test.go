package redlock

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goredlock/goredlock/keyserver/static"
)

// TestPatienceHoldsWhenReleasesFail is issue 45's second promise: against
// servers whose release always fails (a script error), the holder's key
// stays until its TTL, and a waiter still gives up within its patience
// (about a second at the defaults) and a server timeout, not the TTL.
func TestPatienceHoldsWhenReleasesFail(t *testing.T) {
	servers := static.NewCluster(3)
	for _, s := range servers {
		s.Script(static.OpAcquire, static.FromStore)
		s.Script(static.OpRelease, static.Fail(errors.New("ERR user_script:1: bad argument #1 to 'sub'")))
	}
	c, err := New(servers.KeyServers())
	require.NoError(t, err)
	defer c.Close()
	ctx := context.Background()
	held, err := c.TryAcquire(ctx, "k", time.Minute)
	require.NoError(t, err)
	go func() {
		time.Sleep(100 * time.Millisecond)
		held.Release(ctx) //nolint:errcheck // it fails on every server
	}()
	began := time.Now()
	_, err = c.Acquire(ctx, "k", time.Minute)
	took := time.Since(began)
	require.ErrorIs(t, err, ErrNotAcquired)
	assert.Less(t, took, 10*time.Second, "gave up within its patience, not the holder's TTL of a minute")

	dctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	began = time.Now()
	_, err = c.Acquire(dctx, "k", time.Minute, WithRetryCount(-1))
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Less(t, time.Since(began), 5*time.Second, "the caller's deadline is honoured")
}
