package redlock

import (
	"errors"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goredlock/goredlock/internal/clock"
	"github.com/goredlock/goredlock/keyserver/static"
)

// TestReadmeLogIsTrue: what the README says of the log holds. By default
// the client logs nothing, not even through slog's default logger; given
// a logger with WithLogger, a server that keeps failing is one warning,
// and its recovery one info line.
func TestReadmeLogIsTrue(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	require.NoError(t, err)
	i := strings.Index(string(readme), "The log is ")
	require.NotEqual(t, -1, i, "the README's paragraph on the log")
	para, _, _ := strings.Cut(string(readme[i:]), "\n\n")
	para = strings.Join(strings.Fields(para), " ")
	assert.Contains(t, para, "nothing is logged unless", "the README says the default logs nothing")
	assert.Contains(t, para, "WithLogger", "and how to have a log")
	assert.Contains(t, para, "one warning when a key server starts failing")

	// run makes three calls while server 2 fails and one once it is back.
	run := func(opts ...ClientOption) {
		fc := clock.NewFake(t0)
		servers := static.NewCluster(3)
		down := static.Fail(errors.New("connection refused"))
		servers[2].Script(static.OpAcquire, down)
		servers[2].Script(static.OpRelease, down)
		c := testClient(t, fc, servers.KeyServers(), append([]ClientOption{WithRetryCount(0)}, opts...)...)
		for range 3 {
			l, err := c.TryAcquire(bg, "job", 10*time.Second)
			require.NoError(t, err)
			require.NoError(t, l.Release(bg))
			c.bg.Wait()
			fc.Advance(time.Minute) // past the breaker's probe
		}
		servers[2].Script(static.OpAcquire)
		servers[2].Script(static.OpRelease)
		require.Eventually(t, func() bool {
			l, err := c.TryAcquire(bg, "job", 10*time.Second)
			require.NoError(t, err)
			require.NoError(t, l.Release(bg))
			c.bg.Wait()
			fc.Advance(time.Minute)
			return servers[2].Count(static.OpAcquire) > 1
		}, wait, time.Millisecond, "server 2 asked again")
	}

	var mu sync.Mutex
	var def strings.Builder
	was := slog.Default()
	slog.SetDefault(newTestLogger(&mu, &def))
	run()
	slog.SetDefault(was)
	assert.Empty(t, def.String(), "nothing is logged by default")

	var logged strings.Builder
	run(WithLogger(slog.New(slog.NewTextHandler(lockedWriter{&mu, &logged}, nil))))
	lines := strings.Split(strings.TrimSpace(logged.String()), "\n")
	require.Len(t, lines, 2, logged.String())
	assert.Contains(t, lines[0], `level=WARN msg="redlock: key server failing"`)
	assert.Contains(t, lines[0], "server=2")
	assert.Contains(t, lines[1], `level=INFO msg="redlock: key server recovered" server=2`)
}
