package redis_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	redigo "github.com/gomodule/redigo/redis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/goredlock/goredlock/internal/redistest"
	"github.com/goredlock/goredlock/keyserver"
	"github.com/goredlock/goredlock/keyserver/redis"
	"github.com/goredlock/goredlock/redlock"
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

func TestFromURLRefusesBadURLs(t *testing.T) {
	for _, u := range []string{"http://localhost:6379", "localhost:6379", "redis://localhost/notanumber", "redis://%zz", "mysql://u:p@h/db"} {
		s, err := redis.FromURL(u)
		assert.Nil(t, s, u)
		require.ErrorIs(t, err, keyserver.ErrInvalidArgument, u)
	}
	_, err := redis.FromURL("http://user:hunter2@localhost")
	require.Error(t, err)
	assert.NotContains(t, err.Error(), "hunter2", "passwords stay out of errors")
	_, err = redis.FromURL("redis://localhost", redis.WithPooledConnections(0))
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

// TestZeroServerFailsWithoutPanic: a Server that was not made by a
// constructor answers every call with ErrInvalidArgument; it used to panic,
// in a goroutine of the client's.
func TestZeroServerFailsWithoutPanic(t *testing.T) {
	var s redis.Server
	ctx := context.Background()
	token := "0000019a2b3c4d5e.0123456789abcdef0123456789abcdef"
	for what, call := range map[string]func() error{
		"Acquire":         func() error { _, err := s.Acquire(ctx, "k", token, time.Second); return err },
		"Extend":          func() error { _, err := s.Extend(ctx, "k", token, time.Second); return err },
		"Release":         func() error { _, err := s.Release(ctx, "k", token); return err },
		"AcquireOrHolder": func() error { _, _, err := s.AcquireOrHolder(ctx, "k", token, time.Second); return err },
		"AcquireInLine":   func() error { _, _, err := s.AcquireInLine(ctx, "k", token, time.Second, ""); return err },
		"WatchTurn":       func() error { _, _, err := s.WatchTurn(ctx, "k", token); return err },
		"LeaveLine":       func() error { return s.LeaveLine(ctx, "k", token) },
		"AcquireFenced":   func() error { _, _, err := s.AcquireFenced(ctx, "k", token, time.Second); return err },
		"RaiseFence":      func() error { _, err := s.RaiseFence(ctx, "k", 1); return err },
	} {
		if err := call(); !errors.Is(err, keyserver.ErrInvalidArgument) {
			t.Errorf("%s on a zero Server = %v, want ErrInvalidArgument", what, err)
		}
	}
	if err := s.Close(); err != nil {
		t.Errorf("Close of a zero Server = %v", err)
	}
}

// TestRedissToAPlainServer: rediss:// to a Redis that does not serve TLS
// never finishes the handshake; the call says so (see
// TestRedissToAPlainServerSaysTLS), and Close does not wait for the
// handshake's own timeout (5 s).
func TestRedissToAPlainServer(t *testing.T) {
	cluster := redistest.Start(t, 1)
	s, err := redis.FromURL("rediss://" + cluster.Nodes[0].Addr())
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, err = s.Acquire(ctx, "k", "t", time.Second)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Contains(t, err.Error(), "TLS handshake with "+cluster.Nodes[0].Addr()+" timed out")
	start := time.Now()
	require.NoError(t, s.Close())
	assert.Less(t, time.Since(start), 2*time.Second, "Close waited for the TLS handshake's timeout")
}

// TestRedissToAPlainServerSaysTLS: a call to a Redis that does not serve
// TLS, through rediss://, fails by its own deadline with an error that
// names the server and says that the TLS handshake went unanswered, with
// a pipeline or a pool, when the call's deadline ends the wait and when
// the dial timeout does; and a redlock client's error carries the text.
// It used to say "still connecting" or "context deadline exceeded", with
// no word of TLS. The password stays out of every error.
func TestRedissToAPlainServerSaysTLS(t *testing.T) {
	node := redistest.Start(t, 1).Nodes[0]
	const secret = "Secret-pw-7"
	base := "rediss://:" + secret + "@" + node.Addr()
	want := "TLS handshake with " + node.Addr() + " timed out: is the server speaking TLS?"
	check := func(t *testing.T, err error, took, bound time.Duration) {
		t.Helper()
		require.Error(t, err)
		assert.Contains(t, err.Error(), want)
		assert.NotContains(t, err.Error(), secret)
		assert.LessOrEqual(t, took, bound, "the call outlived its deadline: %v", err)
	}
	for _, mode := range []struct {
		name string
		opts []redis.Option
	}{{"pipelined", nil}, {"pooled", []redis.Option{redis.WithPooledConnections()}}} {
		t.Run(mode.name, func(t *testing.T) {
			s := fromURL(t, base, mode.opts...)
			for i := 0; i < 2; i++ { // the first call dials; the second finds the dial running, or dials again
				ctx, cancel := context.WithTimeout(bg, 300*time.Millisecond)
				start := time.Now()
				_, err := s.Acquire(ctx, "k", "t", time.Second)
				cancel()
				check(t, err, time.Since(start), 300*time.Millisecond+time.Second) // a hang waits 5 s or more
				assert.ErrorIs(t, err, context.DeadlineExceeded)
			}
			// No deadline on the call: the dial timeout ends the dial,
			// whichever of its timers (the context's, the handshake's)
			// fires first.
			s = fromURL(t, base+"?dial_timeout=400ms", mode.opts...)
			start := time.Now()
			_, err := s.Acquire(bg, "k", "t", time.Second)
			check(t, err, time.Since(start), 400*time.Millisecond+time.Second)
		})
	}
	t.Run("redlock", func(t *testing.T) {
		s := fromURL(t, base)
		c, err := redlock.New([]keyserver.KeyServer{s}, redlock.WithRetryCount(1), redlock.WithServerTimeout(200*time.Millisecond))
		require.NoError(t, err)
		defer c.Close()
		_, err = c.Acquire(bg, "job", 10*time.Second)
		require.ErrorIs(t, err, redlock.ErrNotAcquired)
		var se *redlock.ServerError
		require.ErrorAs(t, err, &se)
		assert.Contains(t, se.Error(), want)
		assert.NotContains(t, err.Error(), secret)
		assert.Equal(t, 1, strings.Count(err.Error(), "TLS handshake with"), "one server, one error: %v", err)
	})
}
