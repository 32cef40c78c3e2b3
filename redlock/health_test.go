package redlock

import (
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goredlock/goredlock/internal/clock"
	"github.com/goredlock/goredlock/keyserver/static"
)

func TestOneServerDownLogsOneWarningAndOneRecovery(t *testing.T) {
	fc := clock.NewFake(t0)
	var (
		mu  sync.Mutex
		buf strings.Builder
	)
	down := static.Fail(errors.New("dial tcp 10.0.0.3:6379: connection refused"))
	servers := static.NewCluster(3)
	for _, op := range []static.Op{static.OpAcquire, static.OpRelease} {
		servers[2].Script(op, down)
	}
	c := testClient(t, fc, servers.KeyServers(), WithLogger(newTestLogger(&mu, &buf)))
	for i := 0; i < 1000; i++ {
		l, err := c.TryAcquire(bg, "job", ttl3)
		require.NoError(t, err)
		require.NoError(t, l.Release(bg))
	}
	c.bg.Wait()
	for _, op := range []static.Op{static.OpAcquire, static.OpRelease} {
		servers[2].Script(op) // back: answers from its store
	}
	fc.Advance(maxBackoff) // its breaker lets a probe through (see breaker)
	l, err := c.TryAcquire(bg, "job", ttl3)
	require.NoError(t, err)
	require.NoError(t, l.Release(bg))
	c.bg.Wait()

	mu.Lock()
	out := buf.String()
	mu.Unlock()
	assert.Equal(t, 1, strings.Count(out, "level=WARN"), "one warning for the outage")
	assert.Equal(t, 1, strings.Count(out, "level=INFO"), "one line for the recovery")
	assert.Contains(t, out, `msg="redlock: key server recovered" server=2 failures=`)
	assert.Contains(t, out, "lock=job", "lock names are logged")
	assert.NotContains(t, out, l.Token(), "tokens never are")
}
