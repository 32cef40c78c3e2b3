package redis_test

import (
	"context"
	"net/url"
	"strings"
	"testing"
	"time"

	redigo "github.com/gomodule/redigo/redis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goredlock/goredlock/internal/redistest"
	"github.com/goredlock/goredlock/keyserver/redis"
)

// TestIncarnationFollowsRestarts: a Server reports its store's marker and
// run id (the identity that tells two Redis apart) and the marker's age,
// and after a restart (noticed by the first call after it, as a client
// asks after a grant) a new marker, run id and age; in both connection
// modes, and through a pool the caller owns.
func TestIncarnationFollowsRestarts(t *testing.T) {
	began := time.Now()
	node := redistest.Start(t, 1).Nodes[0]
	pool := &redigo.Pool{Dial: func() (redigo.Conn, error) { return redigo.Dial("tcp", node.Addr()) }}
	t.Cleanup(func() { pool.Close() })
	callers := redis.New(pool)
	t.Cleanup(func() { callers.Close() })
	servers := map[string]*redis.Server{
		"pipelined":    fromURL(t, node.URL("")),
		"pooled":       fromURL(t, node.URL(""), redis.WithPooledConnections()),
		"callers pool": callers,
	}
	ctx, cancel := context.WithTimeout(bg, 30*time.Second)
	defer cancel()
	before := map[string]string{}
	for name, s := range servers {
		in, err := s.Incarnation(ctx)
		require.NoError(t, err, name)
		assert.True(t, strings.HasSuffix(in.ID, "/"+node.RunID()), "%s: the marker and the run id, which tell Redis servers apart: %s", name, in.ID)
		assert.False(t, in.Durable, "%s: appendonly no", name)
		assert.LessOrEqual(t, in.Up, time.Hour+time.Since(began), "%s: never older than the marker redistest set", name)
		assert.GreaterOrEqual(t, in.Up, time.Hour, "%s: as old as the marker", name)
		if name != "callers pool" { // read again at every ask: whole seconds, then
			again, err := s.Incarnation(ctx)
			require.NoError(t, err, name)
			assert.GreaterOrEqual(t, again.Up, in.Up-time.Millisecond, "%s: the age grows between reads (read in whole milliseconds)", name)
		}
		before[name] = in.ID
	}

	began = time.Now()
	node.Restart()
	// A pipelined connection written to less than IdleLook ago is not
	// looked at before its next call, so a restart that quick fails the
	// call that meets it, as a call in flight fails (see inline.go). A
	// Valkey restarted in under 10 ms did so in a CI run: this test is of
	// the restart noticed, not of that window.
	time.Sleep(redis.IdleLook)
	for name, s := range servers {
		_, err := s.Acquire(ctx, "k-"+name, "t", time.Second) // the call whose grant a client asks about
		require.NoError(t, err, name)
		in, err := s.Incarnation(ctx)
		require.NoError(t, err, name)
		assert.NotEqual(t, before[name], in.ID, "%s: a restart is a new marker and run id", name)
		assert.LessOrEqual(t, in.Up, time.Since(began), "%s: the data is as old as the restart", name)
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
