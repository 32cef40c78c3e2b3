package gocronlock_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/goredlock/goredlock/integration/gocronlock"
	"github.com/goredlock/goredlock/keyserver"
	"github.com/goredlock/goredlock/keyserver/memory"
	"github.com/goredlock/goredlock/redlock"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var bg = context.Background()

// memoryServers returns one in-memory key server, closed when the test
// ends.
func memoryServers(t *testing.T) []keyserver.KeyServer {
	t.Helper()
	s := memory.New()
	t.Cleanup(func() { s.Close() })
	return []keyserver.KeyServer{s}
}

// newClient returns a client over servers, closed when the test ends
// (before the servers: cleanups run last in, first out).
func newClient(t *testing.T, servers []keyserver.KeyServer, opts ...redlock.ClientOption) *redlock.Client {
	t.Helper()
	c, err := redlock.New(servers, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return c
}

func newLocker(t *testing.T, c *redlock.Client, opts ...gocronlock.Option) *gocronlock.Locker {
	t.Helper()
	k, err := gocronlock.New(c, opts...)
	require.NoError(t, err)
	return k
}
