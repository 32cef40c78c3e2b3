package redlock

import (
	"context"
	"errors"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goredlock/goredlock/internal/clock"
	"github.com/goredlock/goredlock/keyserver/static"
)

// TestDeadServerIsNotCalledPerCall: once a server failed tripAfter calls
// in a row, calls vote it failed without calling it, until a single probe
// after the backoff finds it back; a probe that fails doubles the backoff,
// up to maxBackoff.
func TestDeadServerIsNotCalledPerCall(t *testing.T) {
	fc := clock.NewFake(t0)
	servers := static.NewCluster(3)
	down := static.Fail(errors.New("i/o timeout"))
	servers[2].Script(static.OpAcquire, down)
	servers[2].Script(static.OpRelease, down)
	c := testClient(t, fc, servers.KeyServers())
	lockUnlock := func() {
		t.Helper()
		l, err := c.TryAcquire(bg, "job", ttl3)
		require.NoError(t, err, "the other two are a quorum")
		require.NoError(t, l.Release(bg))
		c.bg.Wait()
	}
	for range tripAfter {
		lockUnlock()
	}
	fc.Advance(tripQuiet)
	lockUnlock()
	calls := servers[2].Count(static.OpAcquire) + servers[2].Count(static.OpRelease)
	for range 100 {
		lockUnlock()
	}
	assert.Equal(t, calls, servers[2].Count(static.OpAcquire)+servers[2].Count(static.OpRelease), "not called while its breaker is open")

	// Probes: one call per backoff, the backoff doubling to maxBackoff.
	var probes []int
	for _, step := range []time.Duration{firstBackoff, 2 * firstBackoff, 4 * firstBackoff, 8 * firstBackoff, maxBackoff, maxBackoff} {
		fc.Advance(step)
		before := servers[2].Count(static.OpAcquire)
		lockUnlock()
		lockUnlock()
		probes = append(probes, servers[2].Count(static.OpAcquire)-before)
	}
	assert.Equal(t, []int{1, 1, 1, 1, 1, 1}, probes, "one probe per backoff")

	// Back: the next probe closes the breaker, and every call reaches it.
	servers[2].Script(static.OpAcquire)
	servers[2].Script(static.OpRelease)
	fc.Advance(maxBackoff)
	lockUnlock()
	before := servers[2].Count(static.OpAcquire)
	for range 10 {
		lockUnlock()
	}
	assert.Equal(t, before+10, servers[2].Count(static.OpAcquire), "called again once it answered")
}

// TestBreakerWaitsNoLongerThanMaxBackoff: with the backoff at its cap, a
// server that comes back is asked again within maxBackoff of its return.
func TestBreakerWaitsNoLongerThanMaxBackoff(t *testing.T) {
	fc := clock.NewFake(t0)
	var b breaker
	err := errors.New("i/o timeout")
	for n := range int64(tripAfter) {
		b.failed(fc, n+1, err, 0)
	}
	require.NoError(t, b.allow(fc), "failures in a row, but over less than tripQuiet: only slow")
	fc.Advance(tripQuiet)
	b.failed(fc, tripAfter+1, err, 0)
	require.Error(t, b.allow(fc), "open")
	for range 10 { // probes that fail
		fc.Advance(maxBackoff)
		require.NoError(t, b.allow(fc), "a probe after the backoff")
		require.Error(t, b.allow(fc), "one probe at a time")
		b.failed(fc, 99, err, 0)
	}
	fc.Advance(maxBackoff)
	require.NoError(t, b.allow(fc), "the capped backoff has passed")
	b.answered()
	assert.NoError(t, b.allow(fc), "closed")
	assert.NoError(t, b.allow(fc), "closed")
}

// TestBreakerCountsTheSilenceOfCallsThatTimedOut: calls that all time out
// together, a timeout of tripQuiet after the server stopped, open the
// breaker then; as many that failed at once, each at once, do not.
func TestBreakerCountsTheSilenceOfCallsThatTimedOut(t *testing.T) {
	fc := clock.NewFake(t0)
	err := fmt.Errorf("no answer: %w", context.DeadlineExceeded)
	var slow, stopped breaker
	for n := range int64(tripAfter) {
		slow.failed(fc, n+1, err, tripQuiet/2)
		stopped.failed(fc, n+1, err, tripQuiet)
	}
	assert.NoError(t, slow.allow(fc), "unanswered for less than tripQuiet: only slow")
	assert.ErrorIs(t, stopped.allow(fc), errServerDown, "unanswered for tripQuiet")
}

// TestDialFailureOpensTheBreakerAtOnce: a server that cannot be dialled
// is not redialled by the next call; a caller's cancellation does not
// count, and frees the probe.
func TestDialFailureOpensTheBreakerAtOnce(t *testing.T) {
	fc := clock.NewFake(t0)
	var b breaker
	b.failed(fc, 1, errors.Join(errors.New("acquire"), &dialError), 0)
	assert.ErrorIs(t, b.allow(fc), errServerDown)
	fc.Advance(firstBackoff)
	require.NoError(t, b.allow(fc), "probe")
	require.Error(t, b.allow(fc))
	b.cancelled()
	assert.NoError(t, b.allow(fc), "the cancelled probe's place goes to the next call")
}

var dialError = net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connection refused")}
