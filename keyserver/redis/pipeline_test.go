package redis_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	redigo "github.com/gomodule/redigo/redis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goredlock/goredlock/internal/clock"
	"github.com/goredlock/goredlock/internal/redistest"
	"github.com/goredlock/goredlock/keyserver"
	"github.com/goredlock/goredlock/keyserver/redis"
)

// Tests of the pipelined mode, FromURL's default. The tests in
// redis_test.go run through it too.

// deadlines are the two kinds of context a pipelined call is bounded by: a
// caller's context.WithTimeout, whose Done the caller watches, and the
// client's clock.Real.WithTimeout, whose timer is never armed: the
// pipeline's expiry watches the deadline instead.
var deadlines = []struct {
	name string
	with func(context.Context, time.Duration) (context.Context, context.CancelFunc)
}{
	{"context", context.WithTimeout},
	{"client", clock.Real{}.WithTimeout},
}

// TestRepliesNeverCrossCallers runs 64 callers on one connection, each
// with answers that depend on its own keys, some of them giving up on
// their calls mid-flight: every answer must be the caller's own.
func TestRepliesNeverCrossCallers(t *testing.T) {
	for _, d := range deadlines {
		t.Run(d.name, func(t *testing.T) { repliesNeverCrossCallers(t, d.with) })
	}
}

func repliesNeverCrossCallers(t *testing.T, withTimeout func(context.Context, time.Duration) (context.Context, context.CancelFunc)) {
	node := redistest.Start(t, 1).Nodes[0]
	s := fromURL(t, node.URL(""))
	const callers, rounds = 64, 60
	for i := 0; i < callers; i++ {
		do(t, node, "SET", fmt.Sprintf("held/%d", i), "other")
	}
	var wg sync.WaitGroup
	for i := 0; i < callers; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			free, held, loose := fmt.Sprintf("free/%d", i), fmt.Sprintf("held/%d", i), fmt.Sprintf("loose/%d", i)
			check := func(what string, want bool, got bool, err error) bool {
				return assert.NoError(t, err, "caller %d: %s", i, what) && assert.Equal(t, want, got, "caller %d: %s", i, what)
			}
			for r := 0; r < rounds; r++ {
				token := fmt.Sprintf("t%d.%d", i, r)
				ctx, cancel := withTimeout(bg, 5*time.Second) // a lost reply fails, not hangs
				switch (i + r) % 3 {
				case 0: // answers yes, no, yes
					ok, err := s.Acquire(ctx, free, token, time.Minute)
					check("acquire of a free key", true, ok, err)
					ok, err = s.Release(ctx, free, token+"x")
					check("release with another token", false, ok, err)
					ok, err = s.Release(ctx, free, token)
					check("release by the holder", true, ok, err)
				case 1: // answers no, no
					ok, err := s.Acquire(ctx, held, token, time.Minute)
					check("acquire of a held key", false, ok, err)
					ok, err = s.Extend(ctx, held, token, time.Minute)
					check("extend of a held key", false, ok, err)
				case 2: // gives up mid-flight; its reply must reach nobody
					short, cancel := withTimeout(bg, time.Duration(r%4)*50*time.Microsecond)
					s.Acquire(short, loose, token, time.Second) //nolint:errcheck // either answer, or none
					cancel()
				}
				cancel()
			}
		}(i)
	}
	wg.Wait()
	assert.Eventually(t, func() bool { return redis.Pending(s) == 0 }, 5*time.Second, 10*time.Millisecond,
		"every abandoned reply was read")
	assert.Equal(t, int64(1), redis.Dials(s), "all on one connection")
}

// TestDeadlinePassesMidFlight: a caller whose deadline passes on a paused
// server returns at once; the calls queued behind it run in order when the
// server resumes, and each later caller gets its own reply.
func TestDeadlinePassesMidFlight(t *testing.T) {
	for _, d := range deadlines {
		t.Run(d.name, func(t *testing.T) { deadlinePassesMidFlight(t, d.with) })
	}
}

func deadlinePassesMidFlight(t *testing.T, withTimeout func(context.Context, time.Duration) (context.Context, context.CancelFunc)) {
	node := redistest.Start(t, 1).Nodes[0]
	s := fromURL(t, node.URL(""))
	_, err := s.Acquire(bg, "warm", "t", time.Second)
	require.NoError(t, err)
	do(t, node, "SET", "b", "tb")
	node.Pause()

	const deadline = 150 * time.Millisecond
	ctx, cancel := withTimeout(bg, deadline)
	defer cancel()
	start := time.Now()
	_, err = s.Acquire(ctx, "a", "ta", time.Minute)
	took := time.Since(start)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Less(t, took, deadline+100*time.Millisecond, "the caller returned at its deadline")

	// Made after "a" was given up on: runs after it, and gets its own reply.
	type answer struct {
		ok  bool
		err error
	}
	released := make(chan answer, 1)
	go func() {
		ctx, cancel := context.WithTimeout(bg, 10*time.Second)
		defer cancel()
		ok, err := s.Release(ctx, "b", "tb")
		released <- answer{ok, err}
	}()
	time.Sleep(50 * time.Millisecond) // let it queue behind "a"
	node.Resume()
	got := <-released
	require.NoError(t, got.err)
	assert.True(t, got.ok, "the release after the abandoned call got its own reply")

	ok, err := s.Acquire(bg, "a", "tc", time.Minute)
	require.NoError(t, err)
	assert.False(t, ok, "the abandoned acquire ran when the server resumed")
	ok, err = s.Release(bg, "a", "ta")
	require.NoError(t, err)
	assert.True(t, ok)
	assert.Equal(t, int64(0), redis.Pending(s))
	assert.Equal(t, int64(1), redis.Dials(s), "a late reply is no reason to reconnect")
}

// TestCallsRunInTheOrderMade: a Release made after an Acquire whose caller
// gave up on a paused server still runs after it, so it deletes the key.
func TestCallsRunInTheOrderMade(t *testing.T) {
	node, s := pausedAfterACall(t)
	ctx, cancel := context.WithTimeout(bg, 50*time.Millisecond)
	defer cancel()
	_, err := s.Acquire(ctx, "k", "t", time.Minute)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	go func() {
		time.Sleep(100 * time.Millisecond)
		node.Resume()
	}()
	ok, err := s.Release(bg, "k", "t")
	require.NoError(t, err)
	assert.True(t, ok, "the release ran after the abandoned acquire")
	assert.Nil(t, do(t, node, "GET", "k"))
}

// TestQueuedReleaseRunsWhenFreshPausedNodeResumes: the first connection to
// a server that is paused loads the scripts ahead of the queued call, so
// the call runs when the server resumes instead of meeting NOSCRIPT.
func TestQueuedReleaseRunsWhenFreshPausedNodeResumes(t *testing.T) {
	node := redistest.Start(t, 1).Nodes[0]
	do(t, node, "SET", "k", "t")
	node.Pause()
	s := fromURL(t, node.URL(""))
	ctx, cancel := context.WithTimeout(bg, 200*time.Millisecond)
	defer cancel()
	_, err := s.Release(ctx, "k", "t")
	require.ErrorIs(t, err, context.DeadlineExceeded)
	node.Resume()
	assert.Eventually(t, func() bool { return do(t, node, "GET", "k") == nil }, 2*time.Second, 10*time.Millisecond,
		"the release queued while the server was paused deleted the key when it resumed")
	assert.Eventually(t, func() bool { return redis.Pending(s) == 0 }, 2*time.Second, 10*time.Millisecond)
	stats, err := redigo.String(do(t, node, "INFO", "errorstats"), nil)
	require.NoError(t, err)
	assert.NotContains(t, stats, "NOSCRIPT", "it ran as sent, in order: the script was loaded ahead of it")
}

// TestRestartMidStream: while callers keep calling, the server restarts.
// The calls caught by it fail with a connection error (never a wrong
// answer or a hang), and calls succeed again on a new connection.
func TestRestartMidStream(t *testing.T) {
	node := redistest.Start(t, 1).Nodes[0]
	s := fromURL(t, node.URL(""))
	const callers = 8
	var (
		wg       sync.WaitGroup
		stop     = make(chan struct{})
		mu       sync.Mutex
		failures []error
	)
	for i := 0; i < callers; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			key := fmt.Sprintf("k%d", i)
			for r := 0; ; r++ {
				select {
				case <-stop:
					return
				default:
				}
				token := fmt.Sprintf("t%d.%d", i, r)
				ctx, cancel := context.WithTimeout(bg, time.Second)
				ok, err := s.Acquire(ctx, key, token, time.Minute)
				if err == nil && ok {
					_, err = s.Release(ctx, key, token)
				}
				cancel()
				if err != nil {
					mu.Lock()
					failures = append(failures, err)
					mu.Unlock()
					time.Sleep(time.Millisecond)
				}
			}
		}(i)
	}
	time.Sleep(100 * time.Millisecond)
	node.Restart()
	time.Sleep(200 * time.Millisecond)
	close(stop)
	wg.Wait()

	for _, err := range failures {
		clean := errors.Is(err, redis.ErrConnectionLost) || strings.Contains(err.Error(), "connecting")
		assert.True(t, clean, "a call caught by the restart failed with: %v", err)
		assert.False(t, errors.Is(err, keyserver.ErrPermanent), "a restart is not permanent: %v", err)
	}
	t.Logf("%d calls failed during the restart", len(failures))
	for i := 0; i < 20; i++ {
		key := fmt.Sprintf("after/%d", i)
		ok, err := s.Acquire(bg, key, "t", time.Minute)
		require.NoError(t, err, "after the restart")
		require.True(t, ok)
		ok, err = s.Release(bg, key, "t")
		require.NoError(t, err)
		require.True(t, ok)
	}
	assert.GreaterOrEqual(t, redis.Dials(s), int64(2), "a new connection")
	assert.Equal(t, int64(0), redis.Pending(s))
}

// TestSilentConnectionIsReplaced: a connection whose oldest call stays
// unanswered past its deadline by the overdue limit is closed; its calls
// fail and the next call opens a new one.
func TestSilentConnectionIsReplaced(t *testing.T) {
	node := redistest.Start(t, 1).Nodes[0]
	s := fromURL(t, node.URL(""))
	redis.SetOverdueLimit(s, 300*time.Millisecond)
	_, err := s.Acquire(bg, "warm", "t", time.Second)
	require.NoError(t, err)
	node.Pause()
	defer node.Resume()

	ctx, cancel := context.WithTimeout(bg, 100*time.Millisecond)
	defer cancel()
	_, err = s.Acquire(ctx, "k", "t", time.Minute)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.Equal(t, int64(1), redis.Pending(s), "its reply is still awaited")
	start := time.Now()
	require.Eventually(t, func() bool { return redis.Pending(s) == 0 }, 2*time.Second, 5*time.Millisecond,
		"the silent connection was closed and its call failed")
	assert.Less(t, time.Since(start), time.Second)

	// A caller without a deadline is answered once the server is back.
	go func() {
		time.Sleep(100 * time.Millisecond)
		node.Resume()
	}()
	ok, err := s.Acquire(bg, "other", "t", time.Minute)
	require.NoError(t, err)
	assert.True(t, ok)
	assert.Equal(t, int64(2), redis.Dials(s))
}

// TestOverloadedIsAnErrorAtOnce: past WithMaxPending calls waiting for a
// server, calls fail at once, and work again once replies drain.
func TestOverloadedIsAnErrorAtOnce(t *testing.T) {
	node := redistest.Start(t, 1).Nodes[0]
	s := fromURL(t, node.URL(""), redis.WithMaxPending(3))
	_, err := s.Acquire(bg, "warm", "t", time.Second)
	require.NoError(t, err)
	node.Pause()
	for i := 0; i < 3; i++ {
		ctx, cancel := context.WithTimeout(bg, 20*time.Millisecond)
		_, err := s.Acquire(ctx, fmt.Sprint("k", i), "t", time.Minute)
		cancel()
		require.ErrorIs(t, err, context.DeadlineExceeded)
	}
	start := time.Now()
	_, err = s.Acquire(bg, "k3", "t", time.Minute)
	require.ErrorIs(t, err, redis.ErrOverloaded)
	assert.Less(t, time.Since(start), 50*time.Millisecond, "refused at once")
	assert.False(t, errors.Is(err, keyserver.ErrPermanent))
	node.Resume()
	require.Eventually(t, func() bool { return redis.Pending(s) == 0 }, 2*time.Second, 5*time.Millisecond)
	ok, err := s.Acquire(bg, "k3", "t", time.Minute)
	require.NoError(t, err)
	assert.True(t, ok)

	_, err = redis.FromURL(node.URL(""), redis.WithMaxPending(-1))
	require.ErrorIs(t, err, keyserver.ErrInvalidArgument)
}

// TestCloseDoesNotWaitForAbandonedReplies: Close waits for its callers,
// not for the replies a paused server owes to callers who gave up.
func TestCloseDoesNotWaitForAbandonedReplies(t *testing.T) {
	node := redistest.Start(t, 1).Nodes[0]
	s, err := redis.FromURL(node.URL(""))
	require.NoError(t, err)
	_, err = s.Acquire(bg, "warm", "t", time.Second)
	require.NoError(t, err)
	node.Pause()
	defer node.Resume()
	ctx, cancel := context.WithTimeout(bg, 50*time.Millisecond)
	defer cancel()
	_, err = s.Acquire(ctx, "k", "t", time.Minute)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	start := time.Now()
	require.NoError(t, s.Close())
	assert.Less(t, time.Since(start), 500*time.Millisecond)
	_, err = s.Release(bg, "k", "t")
	require.ErrorIs(t, err, redis.ErrClosed)
}

func TestPipelinedAuthAndTLS(t *testing.T) {
	concurrently := func(t *testing.T, s *redis.Server) {
		var wg sync.WaitGroup
		for i := 0; i < 16; i++ {
			wg.Add(1)
			go func(key string) {
				defer wg.Done()
				ok, err := s.Acquire(bg, key, "t", time.Minute)
				if assert.NoError(t, err) && assert.True(t, ok) {
					ok, err = s.Release(bg, key, "t")
					assert.NoError(t, err)
					assert.True(t, ok)
				}
			}(fmt.Sprint("k", i))
		}
		wg.Wait()
		assert.Equal(t, int64(1), redis.Dials(s))
	}
	t.Run("password", func(t *testing.T) {
		node := redistest.Start(t, 1, redistest.WithPassword("s3cret")).Nodes[0]
		concurrently(t, fromURL(t, node.URL("s3cret")))
		_, err := fromURL(t, node.URL("wrong")).Acquire(bg, "k", "t", time.Second)
		require.Error(t, err)
		assert.Contains(t, err.Error(), "authentication failed")
		assert.True(t, errors.Is(err, keyserver.ErrPermanent), "a wrong password: %v", err)
	})
	t.Run("database", func(t *testing.T) {
		node := redistest.Start(t, 1).Nodes[0]
		s := fromURL(t, node.URL("")+"/3")
		ok, err := s.Acquire(bg, "k", "t", time.Minute)
		require.NoError(t, err)
		require.True(t, ok)
		assert.Nil(t, do(t, node, "GET", "k"), "not in database 0")
		conn, err := redigo.Dial("tcp", node.Addr(), redigo.DialDatabase(3))
		require.NoError(t, err)
		defer conn.Close()
		v, err := redigo.String(conn.Do("GET", "k"))
		require.NoError(t, err)
		assert.Equal(t, "t", v)
	})
	t.Run("TLS", func(t *testing.T) {
		c := redistest.Start(t, 1, redistest.WithTLS())
		url := c.Nodes[0].URL("")
		concurrently(t, fromURL(t, url, redis.WithDialOptions(redigo.DialTLSConfig(c.TLSConfig()))))
		ctx, cancel := context.WithTimeout(bg, 2*time.Second)
		defer cancel()
		_, err := fromURL(t, url).Acquire(ctx, "k", "t", time.Second)
		require.Error(t, err)
		assert.Contains(t, err.Error(), "certificate")
		assert.True(t, errors.Is(err, keyserver.ErrPermanent), "an untrusted certificate: %v", err)
	})
}

// TestIdleConnectionClosedByServerIsReplaced: a server that closes an
// idle connection (here CLIENT KILL; a restart or its idle timeout alike)
// costs the next call nothing: it runs on a new connection.
func TestIdleConnectionClosedByServerIsReplaced(t *testing.T) {
	node := redistest.Start(t, 1).Nodes[0]
	s := fromURL(t, node.URL(""))
	_, err := s.Acquire(bg, "warm", "t", time.Second)
	require.NoError(t, err)
	// Idle: on a busy machine the reader may still hold the connection
	// after the reply, and a call then goes through the writer, which
	// does not look for a close (only a call made inline on an idle
	// connection does).
	require.Eventually(t, func() bool { return redis.Idle(s) }, 5*time.Second, time.Millisecond)
	conn, err := redigo.Dial("tcp", node.Addr())
	require.NoError(t, err)
	defer conn.Close()
	killed, err := redigo.Int(conn.Do("CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes"))
	require.NoError(t, err)
	require.Equal(t, 1, killed, "the pipelined connection")
	// Redis closes a killed connection after it answered CLIENT KILL: the
	// test's calls come once it has, as a server's idle timeout closes a
	// connection long before the next call. (A call written while the
	// server is closing the connection meets the close, on any design.)
	require.Eventually(t, func() bool {
		list, err := redigo.String(conn.Do("CLIENT", "LIST", "TYPE", "normal"))
		return err == nil && strings.Count(list, "id=") == 1 // this connection alone
	}, 5*time.Second, time.Millisecond)
	// And the connection has been idle long enough to be looked at (a
	// close in the first milliseconds after a write fails the call that
	// meets it; a server's idle timeout is a second at the least).
	time.Sleep(redis.IdleLook)

	for i := 0; i < 3; i++ {
		ok, err := s.Acquire(bg, fmt.Sprint("k", i), "t", time.Minute)
		require.NoError(t, err, "call %d after the kill", i)
		assert.True(t, ok)
	}
	assert.Equal(t, int64(2), redis.Dials(s))
}

// TestIdleConnectionOutlivesItsDeadline: a connection idle for longer than
// the read deadline its last call left on the socket is still used, not
// replaced (the look for a server's close must not fail on the deadline).
func TestIdleConnectionOutlivesItsDeadline(t *testing.T) {
	node := redistest.Start(t, 1).Nodes[0]
	s := fromURL(t, node.URL(""))
	for i := 0; i < 3; i++ {
		ctx, cancel := context.WithTimeout(bg, 5*time.Millisecond+time.Second)
		ok, err := s.Acquire(ctx, fmt.Sprint("k", i), "t", time.Minute)
		cancel()
		require.NoError(t, err)
		assert.True(t, ok)
		require.Eventually(t, func() bool { return redis.Idle(s) }, 5*time.Second, time.Millisecond)
		time.Sleep(2 * redis.IdleLook) // past the inline wait's deadline, so the next call looks
	}
	assert.Equal(t, int64(1), redis.Dials(s), "connections opened")
}

// TestCallAloneEndsWithItsContext: a call alone on an idle connection to
// a paused server returns when its context is cancelled, long before its
// deadline; its reply is read and dropped when the server resumes, on the
// same connection.
func TestCallAloneEndsWithItsContext(t *testing.T) {
	for _, d := range deadlines {
		t.Run(d.name, func(t *testing.T) { callAloneEndsWithItsContext(t, d.with) })
	}
}

// callAloneEndsWithItsContext cancels the parent of the call's context,
// as a caller of the client would: the client's own contexts are
// cancelled only once their calls have returned.
func callAloneEndsWithItsContext(t *testing.T, withTimeout func(context.Context, time.Duration) (context.Context, context.CancelFunc)) {
	node, s := pausedAfterACall(t)
	parent, cancel := context.WithCancel(bg)
	ctx, stop := withTimeout(parent, time.Minute)
	defer stop()
	time.AfterFunc(100*time.Millisecond, cancel)
	start := time.Now()
	_, err := s.Acquire(ctx, "k", "t", time.Minute)
	require.ErrorIs(t, err, context.Canceled)
	assert.Less(t, time.Since(start), 30*time.Second, "returned at the cancellation, not the deadline")
	assert.Equal(t, int64(1), redis.Pending(s), "its reply is still awaited")

	node.Resume()
	ok, err := s.Release(bg, "k", "t")
	require.NoError(t, err)
	assert.True(t, ok, "the call given up on ran, before the one after it")
	assert.Equal(t, int64(0), redis.Pending(s))
	assert.Equal(t, int64(1), redis.Dials(s), "a late reply is no reason to reconnect")
}

// pausedAfterACall returns a node, paused until the test ends or it
// resumes it, and a pipelined Server whose connection to it is open and
// idle, so that its next call alone is made inline.
func pausedAfterACall(t *testing.T) (*redistest.Node, *redis.Server) {
	t.Helper()
	node := redistest.Start(t, 1).Nodes[0]
	s := fromURL(t, node.URL(""))
	_, err := s.Acquire(bg, "warm", "t", time.Second)
	require.NoError(t, err)
	// The reader lets the connection go just after it handed the reply.
	require.Eventually(t, func() bool { return redis.Idle(s) }, 5*time.Second, time.Millisecond)
	node.Pause()
	t.Cleanup(node.Resume)
	return node, s
}

// TestCallAloneOutlastingTheInlineWait: a call alone whose reply takes
// longer than a caller waits on the socket (a paused server) is answered
// all the same, by the connection's reader, on the same connection.
func TestCallAloneOutlastingTheInlineWait(t *testing.T) {
	node, s := pausedAfterACall(t)
	time.AfterFunc(50*time.Millisecond, node.Resume)
	ctx, cancel := context.WithTimeout(bg, 10*time.Second)
	defer cancel()
	ok, err := s.Acquire(ctx, "k", "t", time.Minute)
	require.NoError(t, err)
	assert.True(t, ok)
	assert.Equal(t, int64(0), redis.Pending(s))
	assert.Equal(t, int64(1), redis.Dials(s))
}
