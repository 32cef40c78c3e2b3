package miniredis_test

import (
	"context"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goredlock/goredlock/redlock"
)

// readSlack is how much earlier than a TTL a quarantine may end on
// miniredis, whose TTLs and TIME follow different clocks.
const readSlack = 50 * time.Millisecond

// The restart tests of this file (a majority restarted empty, a fresh
// process after it) were taken out: miniredis v2.40.0 panics, in its own
// INFO (server.go ClientsLen on a nil server), when a command arrives
// while Restart runs, which the client's reconnects make likely. Rule 19
// is tested on Redis 7.0, 7.4.1 and Valkey 8.0.1 (redlock's
// TestRedisFreshProcessAfterMajorityRestart, make test-engines).

// TestUnseededServersWaitOutTheQuarantine: miniredis servers without a
// marker (a brand-new deployment, as every miniredis.Run is) are
// quarantined for the call's TTL from the client's first look at them;
// NoQuarantine opts out. Hence start's seed.
func TestUnseededServersWaitOutTheQuarantine(t *testing.T) {
	const ttl = time.Second
	mrs := []*miniredis.Miniredis{miniredis.RunT(t), miniredis.RunT(t), miniredis.RunT(t)}
	c := clientOn(t, mrs, steady)
	began := time.Now()
	_, err := c.TryAcquire(bg, "job", ttl)
	require.ErrorIs(t, err, redlock.ErrQuarantined)
	require.Eventually(t, func() bool {
		l, err := c.TryAcquire(context.Background(), "job", ttl)
		if err != nil {
			return false
		}
		assert.GreaterOrEqual(t, time.Since(began), ttl-readSlack)
		return assert.NoError(t, l.Release(bg))
	}, 10*time.Second, 20*time.Millisecond, "granted once the servers' markers are a TTL old")

	unsafe := clientOn(t, []*miniredis.Miniredis{miniredis.RunT(t), miniredis.RunT(t), miniredis.RunT(t)},
		steady, redlock.WithQuarantine(redlock.NoQuarantine))
	l, err := unsafe.TryAcquire(bg, "job", ttl)
	require.NoError(t, err, "NoQuarantine: granted at once")
	require.NoError(t, l.Release(bg))
}
