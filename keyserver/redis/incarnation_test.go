package redis_test

import (
	"context"
	"net/url"
	"testing"
	"time"

	redigo "github.com/gomodule/redigo/redis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goredlock/goredlock/internal/redistest"
	"github.com/goredlock/goredlock/keyserver/redis"
)

// TestIncarnationFollowsRestarts: a Server reports its Redis's run id (the
// identity that tells two Redis apart) and uptime, and after a restart
// (noticed by the first call after it, as a client asks after a grant) a
// new run id and an uptime that started again; in both connection modes,
// and through a pool the caller owns.
func TestIncarnationFollowsRestarts(t *testing.T) {
	began := time.Now()
	node := redistest.Start(t, 1).Nodes[0]
	pool := &redigo.Pool{Dial: func() (redigo.Conn, error) { return redigo.Dial("tcp", node.Addr()) }}
	t.Cleanup(func() { pool.Close() })
	servers := map[string]*redis.Server{
		"pipelined":    fromURL(t, node.URL("")),
		"pooled":       fromURL(t, node.URL(""), redis.WithPooledConnections()),
		"callers pool": redis.New(pool),
	}
	ctx, cancel := context.WithTimeout(bg, 30*time.Second)
	defer cancel()
	before := map[string]string{}
	for name, s := range servers {
		in, err := s.Incarnation(ctx)
		require.NoError(t, err, name)
		assert.Equal(t, node.RunID(), in.ID, "%s: the run id, which tells Redis servers apart", name)
		assert.False(t, in.Durable, "%s: appendonly no", name)
		assert.LessOrEqual(t, in.Up, time.Since(began), "%s: never more than it has been up", name)
		if name != "callers pool" { // read again at every ask: whole seconds, then
			again, err := s.Incarnation(ctx)
			require.NoError(t, err, name)
			assert.GreaterOrEqual(t, again.Up, in.Up, "%s: the uptime ages between reads", name)
		}
		before[name] = in.ID
	}

	began = time.Now()
	node.Restart()
	for name, s := range servers {
		_, err := s.Acquire(ctx, "k-"+name, "t", time.Second) // the call whose grant a client asks about
		require.NoError(t, err, name)
		in, err := s.Incarnation(ctx)
		require.NoError(t, err, name)
		assert.NotEqual(t, before[name], in.ID, "%s: a restart is a new run id", name)
		assert.LessOrEqual(t, in.Up, time.Since(began), "%s: the uptime started again", name)
	}
}

// TestIncarnationDurable: appendonly yes with appendfsync always is
// durable; the same server reached by a user whom an ACL denies CONFIG
// cannot tell, which counts as not durable, without an error.
func TestIncarnationDurable(t *testing.T) {
	node := redistest.Start(t, 1, redistest.WithAppendFsyncAlways()).Nodes[0]
	ctx, cancel := context.WithTimeout(bg, 30*time.Second)
	defer cancel()
	in, err := fromURL(t, node.URL("")).Incarnation(ctx)
	require.NoError(t, err)
	assert.True(t, in.Durable)

	node.MustDo("ACL", "SETUSER", "locker", "on", ">locker-pw", "~*", "&*", "+@all", "-config")
	u, err := url.Parse(node.URL(""))
	require.NoError(t, err)
	u.User = url.UserPassword("locker", "locker-pw")
	in, err = fromURL(t, u.String()).Incarnation(ctx)
	require.NoError(t, err)
	assert.False(t, in.Durable, "CONFIG denied: not known to be durable")
	assert.NotEmpty(t, in.ID)
}
