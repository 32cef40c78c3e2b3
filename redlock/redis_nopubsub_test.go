package redlock_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/goredlock/goredlock/internal/redistest"
	"github.com/goredlock/goredlock/keyserver"
	"github.com/goredlock/goredlock/redlock"
)

// TestRedisHandOverWithoutPubSub (rule 16): a user denied Pub/Sub
// (-@pubsub) still hands a contended lock from one client to the next:
// its waiters poll, at the retry delay, where Pub/Sub would have woken
// them. The test prints the release → grant times of both, side by side,
// on the same servers; no waiter gives up within its patience.
func TestRedisHandOverWithoutPubSub(t *testing.T) {
	cluster := redistest.Start(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const rounds = 40
	// handOvers times rounds of release → grant; degraded counts the
	// Degraded hook's calls for the waiter.
	handOvers := func(urls []string) (p50, p99 time.Duration, degraded map[int]int) {
		t.Helper()
		newClient := clientsAt(t, urls)
		degraded = map[int]int{}
		var mu sync.Mutex
		holder := newClient()
		waiter := newClient(redlock.WithHooks(redlock.Hooks{Degraded: func(_ context.Context, server int, feature string, err error) {
			mu.Lock()
			defer mu.Unlock()
			degraded[server]++
			assert.Equal(t, "watch", feature)
			assert.ErrorIs(t, err, keyserver.ErrPermanent)
			assert.ErrorContains(t, err, "+subscribe", "the refusal names the ACL rule")
		}}))
		took := releaseToGrant(ctx, t, holder, waiter, rounds, 3, 20*time.Millisecond)
		mu.Lock()
		defer mu.Unlock()
		return took[rounds/2], took[rounds*99/100], degraded
	}
	withP50, withP99, degraded := handOvers(aclUser(t, cluster, leastPrivilege...))
	assert.Empty(t, degraded, "with Pub/Sub, nothing is degraded")
	withoutP50, withoutP99, degraded := handOvers(aclUser(t, cluster, append(leastPrivilege, "-@pubsub")...))
	assert.Equal(t, map[int]int{0: 1, 1: 1, 2: 1}, degraded, "said once per server, not per wait")
	t.Logf("release → grant in another client, 3 nodes: with Pub/Sub p50 %v p99 %v; without p50 %v p99 %v",
		withP50, withP99, withoutP50, withoutP99)
	// Polled at the retry delay (200 ms, jittered), not at the renewal of
	// a place in line (a second): the bound only a waiter that waited for
	// its place to be renewed breaks, however busy the machine.
	assert.Less(t, withoutP50, 700*time.Millisecond, "waiters poll at the retry delay")
}
