package redlock

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goredlock/goredlock/internal/clock"
	"github.com/goredlock/goredlock/keyserver"
	"github.com/goredlock/goredlock/keyserver/memory"
)

// warnings returns the WARN lines of a log written by newTestLogger.
func warnings(mu *sync.Mutex, log *strings.Builder) []string {
	mu.Lock()
	defer mu.Unlock()
	var ws []string
	for _, l := range strings.Split(log.String(), "\n") {
		if strings.Contains(l, "level=WARN") {
			ws = append(ws, l)
		}
	}
	return ws
}

// rivalFencer is a memory server on which another grant of the name
// draws the same fencing token just before each of the first rivals
// write rounds' calls lands (as the permits of one semaphore draw theirs
// at once): each of those calls finds the counter at its proposal.
type rivalFencer struct {
	*memory.Server
	rivals *atomic.Int64
}

func (r rivalFencer) RaiseFence(ctx context.Context, key string, fence uint64) (uint64, error) {
	if fence > 0 && r.rivals.Add(-1) >= 0 {
		if _, err := r.Server.RaiseFence(ctx, key, fence); err != nil {
			return 0, err
		}
	}
	return r.Server.RaiseFence(ctx, key, fence)
}

// TestFenceRoundsLostToRivalsAreNoFailure: a grant whose write rounds keep
// finding that other grants of the name drew their tokens meanwhile (the
// permits of a semaphore draw on one counter) goes on proposing more
// while its validity lasts, as no server failed: it gets a token greater
// than the rivals', and nothing is logged above debug level. Three lost
// rounds used to fail the grant with a warning that the token was not
// written to a quorum.
func TestFenceRoundsLostToRivalsAreNoFailure(t *testing.T) {
	fc := clock.NewFake(t0)
	var rivals atomic.Int64
	var servers []keyserver.KeyServer
	for _, s := range memoryServers(t, fc, 5) {
		servers = append(servers, rivalFencer{s.(*memory.Server), &rivals})
	}
	var mu sync.Mutex
	var log strings.Builder
	c := testClient(t, fc, servers, WithFencing(), WithLogger(newTestLogger(&mu, &log)))
	const lostRounds = 4
	rivals.Store(lostRounds * 5)
	p, err := c.Semaphore("pool", 3).TryAcquire(bg, 10*time.Second)
	require.NoError(t, err, "a free permit, though rivals drew tokens meanwhile")
	assert.Equal(t, uint64(lostRounds+1), p.Fence(), "greater than every rival's")
	require.NoError(t, p.Release(bg))
	assert.Empty(t, warnings(&mu, &log), "no server failed")
	mu.Lock()
	assert.NotContains(t, log.String(), "not written to a quorum")
	mu.Unlock()
}

// TestHealthyFencedSemaphoreLogsNoWarning: 8 goroutines × 20 Do on a
// fenced semaphore of 3 permits over 5 healthy servers: every hold gets a
// distinct fence, and the log has no warning.
func TestHealthyFencedSemaphoreLogsNoWarning(t *testing.T) {
	servers := make([]keyserver.KeyServer, 5)
	for i := range servers {
		s := memory.New()
		t.Cleanup(func() { s.Close() })
		servers[i] = s
	}
	var mu sync.Mutex
	var log strings.Builder
	c, err := New(servers, WithFencing(), WithLogger(newTestLogger(&mu, &log)))
	require.NoError(t, err)
	defer c.Close()
	fences := fencedDos(t, c.Semaphore("pool", 3), 8, 20)
	assert.Len(t, fences, 8*20, "a distinct fence per hold")
	assert.Empty(t, warnings(&mu, &log))
}

// fencedDos runs n Do calls in each of g goroutines on sem, and returns
// the fences their holds got.
func fencedDos(t testing.TB, sem *Semaphore, g, n int) map[uint64]bool {
	var fmu sync.Mutex
	fences := make(map[uint64]bool)
	var wg sync.WaitGroup
	for range g {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range n {
				err := sem.Do(bg, 10*time.Second, func(ctx context.Context) error {
					l, _ := LockFromContext(ctx)
					fmu.Lock()
					fences[l.Fence()] = true
					fmu.Unlock()
					time.Sleep(time.Millisecond)
					return nil
				})
				assert.NoError(t, err)
			}
		}()
	}
	wg.Wait()
	return fences
}

// TestPermitsDifferIsOneErrorNoWarning: a call with another permit count
// than the semaphore's holders gave is the caller's mistake, not five
// failing servers: one error that says it once, and no warning in the log.
func TestPermitsDifferIsOneErrorNoWarning(t *testing.T) {
	fc := clock.NewFake(t0)
	servers := memoryServers(t, fc, 5)
	var mu sync.Mutex
	var log strings.Builder
	a := testClient(t, fc, servers)
	b := testClient(t, fc, servers, WithLogger(newTestLogger(&mu, &log)))
	p, err := a.Semaphore("pool", 3).Acquire(bg, time.Minute)
	require.NoError(t, err)
	_, err = b.Semaphore("pool", 4).Acquire(bg, time.Minute)
	require.ErrorIs(t, err, keyserver.ErrPermitsDiffer)
	require.ErrorIs(t, err, ErrNotAcquired)
	msg := err.Error()
	assert.Equal(t, 1, strings.Count(msg, "asked with 4 permits, stored with 3"), "said once: %s", msg)
	assert.Contains(t, msg, "5 hold it with another permit count")
	assert.NotContains(t, msg, "failed", "no server failed: %s", msg)
	b.bg.Wait()
	assert.Empty(t, warnings(&mu, &log), "no server failed")
	require.NoError(t, p.Release(bg))
}
