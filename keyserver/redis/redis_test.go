package redis_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	redigo "github.com/gomodule/redigo/redis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/goredlock/goredlock/internal/redistest"
	"github.com/goredlock/goredlock/keyserver"
	"github.com/goredlock/goredlock/keyserver/keyservertest"
	"github.com/goredlock/goredlock/keyserver/redis"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var bg = context.Background()

// fromURL returns a Server for url, closed when the test ends.
func fromURL(t *testing.T, url string, opts ...redis.Option) *redis.Server {
	t.Helper()
	s, err := redis.FromURL(url, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	return s
}

// do runs one command on node directly, outside the key server.
func do(t *testing.T, node *redistest.Node, cmd string, args ...any) any {
	t.Helper()
	conn, err := redigo.Dial("tcp", node.Addr())
	require.NoError(t, err)
	defer conn.Close()
	reply, err := conn.Do(cmd, args...)
	require.NoError(t, err)
	return reply
}

func TestConformance(t *testing.T) {
	node := redistest.Start(t, 1).Nodes[0]
	keyservertest.Run(t, func(t *testing.T) keyserver.KeyServer {
		return fromURL(t, node.URL(""))
	})
}

func TestNewOverCallersPool(t *testing.T) {
	node := redistest.Start(t, 1).Nodes[0]
	pool := &redigo.Pool{Dial: func() (redigo.Conn, error) { return redigo.Dial("tcp", node.Addr()) }}
	defer pool.Close()
	s := redis.New(pool, redis.WithName("a"))
	ok, err := s.Acquire(bg, "k", "t", time.Second)
	require.NoError(t, err)
	assert.True(t, ok)
	require.NoError(t, s.Close(), "Close leaves the caller's pool alone")
	_, err = s.Release(bg, "k", "t")
	assert.ErrorIs(t, err, redis.ErrClosed, "a closed Server refuses every call, whoever owns the pool")
	conn := pool.Get()
	defer conn.Close()
	v, err := redigo.String(conn.Do("GET", "k"))
	require.NoError(t, err, "the pool is still open")
	assert.Equal(t, "t", v)
}

func TestWrongTypeKeyIsAnErrorAndLeftAlone(t *testing.T) {
	node := redistest.Start(t, 1).Nodes[0]
	s := fromURL(t, node.URL(""))
	do(t, node, "RPUSH", "jobs", "x")
	for name, call := range map[string]func() (bool, error){
		"acquire": func() (bool, error) { return s.Acquire(bg, "jobs", "t", time.Second) },
		"extend":  func() (bool, error) { return s.Extend(bg, "jobs", "t", time.Second) },
		"release": func() (bool, error) { return s.Release(bg, "jobs", "t") },
	} {
		ok, err := call()
		assert.False(t, ok, name)
		require.Error(t, err, name)
		assert.Contains(t, err.Error(), "WRONGTYPE", name)
		assert.Contains(t, err.Error(), name, "the error names the operation")
		assert.Contains(t, err.Error(), node.Addr(), "the error names the server")
	}
	assert.Equal(t, "list", do(t, node, "TYPE", "jobs"))
	assert.Equal(t, int64(1), do(t, node, "LLEN", "jobs"))
	assert.Equal(t, int64(-1), do(t, node, "PTTL", "jobs"), "no TTL was set on it")
}

// TestAcquireRunsAScriptOnlyOnAKeyThatExists: an Acquire of an absent key
// is one SET NX, cheaper for Redis than a script; a key that exists gets
// the script, which renews the caller's own token and refuses another.
func TestAcquireRunsAScriptOnlyOnAKeyThatExists(t *testing.T) {
	node := redistest.Start(t, 1).Nodes[0]
	for name, s := range map[string]*redis.Server{
		"pipelined": fromURL(t, node.URL("")),
		"pooled":    fromURL(t, node.URL(""), redis.WithPooledConnections()),
	} {
		key := "k/" + name
		for i := 0; i < 2; i++ { // opens the connection, and loads the script (EVAL on NOSCRIPT)
			_, err := s.Acquire(bg, "warm/"+name, "t", time.Second)
			require.NoError(t, err)
		}
		do(t, node, "CONFIG", "RESETSTAT")
		ok, err := s.Acquire(bg, key, "t", time.Minute)
		require.NoError(t, err)
		require.True(t, ok)
		assert.Equal(t, map[string]int{"set": 1}, lockCalls(t, node), name+": a free key")

		do(t, node, "CONFIG", "RESETSTAT")
		ok, err = s.Acquire(bg, key, "t", 90*time.Second)
		require.NoError(t, err)
		assert.True(t, ok, name+": renewed")
		assert.InDelta(t, 90_000, do(t, node, "PTTL", key).(int64), 1000, name+": renewed")
		assert.Equal(t, map[string]int{"set": 3, "evalsha": 1}, lockCalls(t, node), name+": a key of ours")

		ok, err = s.Acquire(bg, key, "u", time.Minute)
		require.NoError(t, err)
		assert.False(t, ok, name+": held by another token")
		assert.Equal(t, []byte("t"), do(t, node, "GET", key))

		do(t, node, "CONFIG", "RESETSTAT")
		ok, _, err = s.AcquireOrHolder(bg, key+"/w", "t", time.Minute)
		require.NoError(t, err)
		require.True(t, ok)
		assert.Equal(t, map[string]int{"set": 1}, lockCalls(t, node), name+": AcquireOrHolder on a free key")
	}
}

// lockCalls returns how many times node ran each of the commands the lock
// operations use since its statistics were reset, scripts' commands
// included.
func lockCalls(t *testing.T, node *redistest.Node) map[string]int {
	t.Helper()
	stats, err := redigo.String(do(t, node, "INFO", "commandstats"), nil)
	require.NoError(t, err)
	calls := map[string]int{}
	for _, line := range strings.Split(stats, "\r\n") {
		var cmd string
		var n int
		if _, err := fmt.Sscanf(strings.Replace(line, ":", " ", 1), "cmdstat_%s calls=%d,", &cmd, &n); err != nil {
			continue
		}
		switch cmd {
		case "set", "get", "pexpire", "del", "evalsha", "eval":
			calls[cmd] = n
		}
	}
	return calls
}

func TestScriptFlushIsSurvived(t *testing.T) {
	node := redistest.Start(t, 1).Nodes[0]
	s := fromURL(t, node.URL(""))
	ok, err := s.Acquire(bg, "k", "t", time.Minute)
	require.NoError(t, err)
	require.True(t, ok)
	do(t, node, "SCRIPT", "FLUSH")
	ok, err = s.Extend(bg, "k", "t", time.Minute)
	require.NoError(t, err)
	assert.True(t, ok)
	do(t, node, "SCRIPT", "FLUSH")
	ok, err = s.Release(bg, "k", "t")
	require.NoError(t, err)
	assert.True(t, ok)
}

func TestTTLIsSetInMilliseconds(t *testing.T) {
	node := redistest.Start(t, 1).Nodes[0]
	s := fromURL(t, node.URL(""))
	ok, err := s.Acquire(bg, "k", "t", 90*time.Second)
	require.NoError(t, err)
	require.True(t, ok)
	pttl := do(t, node, "PTTL", "k").(int64)
	assert.InDelta(t, 90_000, pttl, 1000)
	assert.Equal(t, []byte("t"), do(t, node, "GET", "k"))
}

func TestRestartedNodeIsRepopulatedByExtend(t *testing.T) {
	node := redistest.Start(t, 1).Nodes[0]
	s := fromURL(t, node.URL(""))
	ok, err := s.Acquire(bg, "k", "t", time.Minute)
	require.NoError(t, err)
	require.True(t, ok)
	node.Restart()
	assert.Nil(t, do(t, node, "GET", "k"), "restarted empty")
	// The pool's connection broke with the restart; the call replaces it.
	ok, err = s.Extend(bg, "k", "t", time.Minute)
	require.NoError(t, err)
	assert.True(t, ok)
	assert.Equal(t, []byte("t"), do(t, node, "GET", "k"))
}

func TestPausedNodeCostsAtMostTheDeadline(t *testing.T) {
	node := redistest.Start(t, 1).Nodes[0]
	s := fromURL(t, node.URL(""))
	_, err := s.Acquire(bg, "warm", "t", time.Second) // a pooled connection
	require.NoError(t, err)
	node.Pause()
	for _, name := range []string{"pooled connection", "new connection"} {
		ctx, cancel := context.WithTimeout(bg, 200*time.Millisecond)
		start := time.Now()
		_, err = s.Acquire(ctx, "k-"+name, "t", time.Second)
		took := time.Since(start)
		cancel()
		require.Error(t, err, name)
		assert.True(t, errors.Is(err, context.DeadlineExceeded) || strings.Contains(err.Error(), "timeout"), "%s: %v", name, err)
		assert.Less(t, took, time.Second, "%s: a paused server held the call for %v", name, took)
	}
	node.Resume()
}

func TestKilledNodeIsAnError(t *testing.T) {
	node := redistest.Start(t, 1).Nodes[0]
	s := fromURL(t, node.URL(""))
	node.Kill()
	ctx, cancel := context.WithTimeout(bg, time.Second)
	defer cancel()
	_, err := s.Acquire(ctx, "k", "t", time.Second)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "connecting")
}

func TestPassword(t *testing.T) {
	node := redistest.Start(t, 1, redistest.WithPassword("s3cret")).Nodes[0]
	s := fromURL(t, node.URL("s3cret"))
	ok, err := s.Acquire(bg, "k", "t", time.Second)
	require.NoError(t, err)
	assert.True(t, ok)

	for _, pw := range []string{"wrong", ""} {
		bad := fromURL(t, node.URL(pw))
		_, err = bad.Acquire(bg, "k", "t", time.Second)
		require.Error(t, err, "password %q", pw)
		assert.Contains(t, err.Error(), "authentication failed", "password %q", pw)
	}
}

func TestTLS(t *testing.T) {
	c := redistest.Start(t, 1, redistest.WithTLS())
	url := c.Nodes[0].URL("")
	require.True(t, strings.HasPrefix(url, "rediss://"))
	s := fromURL(t, url, redis.WithDialOptions(redigo.DialTLSConfig(c.TLSConfig())))
	ok, err := s.Acquire(bg, "k", "t", time.Second)
	require.NoError(t, err)
	assert.True(t, ok)
	ok, err = s.Release(bg, "k", "t")
	require.NoError(t, err)
	assert.True(t, ok)

	untrusted := fromURL(t, url)
	ctx, cancel := context.WithTimeout(bg, 2*time.Second)
	defer cancel()
	_, err = untrusted.Acquire(ctx, "k", "t", time.Second)
	require.Error(t, err, "a certificate from an unknown authority is refused")
	assert.Contains(t, err.Error(), "certificate")
}

func TestFromURLRefusesBadURLs(t *testing.T) {
	for _, u := range []string{"http://localhost:6379", "localhost:6379", "redis://localhost/notanumber", "redis://%zz", "mysql://u:p@h/db"} {
		s, err := redis.FromURL(u)
		assert.Nil(t, s, u)
		require.ErrorIs(t, err, keyserver.ErrInvalidArgument, u)
	}
	_, err := redis.FromURL("http://user:hunter2@localhost")
	require.Error(t, err)
	assert.NotContains(t, err.Error(), "hunter2", "passwords stay out of errors")
	_, err = redis.FromURL("redis://localhost", redis.WithMaxConnections(0))
	require.ErrorIs(t, err, keyserver.ErrInvalidArgument)
	s, err := redis.FromURL("rediss://:pw@localhost:6380/2")
	require.NoError(t, err)
	assert.Equal(t, "localhost:6380", s.String())
	require.NoError(t, s.Close())
}

func TestCloseWaitsForCallsThenRefuses(t *testing.T) {
	node := redistest.Start(t, 1).Nodes[0]
	s, err := redis.FromURL(node.URL(""))
	require.NoError(t, err)
	_, err = s.Acquire(bg, "warm", "t", time.Second)
	require.NoError(t, err)
	node.Pause()
	start := time.Now()
	ctx, cancel := context.WithTimeout(bg, 300*time.Millisecond)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := s.Acquire(ctx, "k", "t", time.Second)
		done <- err
	}()
	require.Eventually(t, func() bool { return redis.Pending(s) == 1 }, time.Second, time.Millisecond, "the call is queued")
	require.NoError(t, s.Close())
	assert.GreaterOrEqual(t, time.Since(start), 300*time.Millisecond, "Close returned while a call was in flight")
	require.ErrorIs(t, <-done, context.DeadlineExceeded, "the paused call ended at its deadline")
	node.Resume()
	_, err = s.Acquire(bg, "k", "t", time.Second)
	require.ErrorIs(t, err, redis.ErrClosed)
	require.NoError(t, s.Close(), "a second Close")
}
