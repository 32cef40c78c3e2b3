package redlock

import (
	"context"
	"errors"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goredlock/goredlock/internal/clock"
	"github.com/goredlock/goredlock/keyserver/static"
)

// lockWord finds "lock" as a word of its own (not the "lock" of
// "redlock:", "read-write lock" aside).
var lockWord = regexp.MustCompile(`\block\b`)

// TestErrorsSayRedlockOnceInTheirHoldsWords: the errors of each kind of
// hold's failed calls start with "redlock: " and say it once, also where
// they wrap another error of the package (a lost lock's release, a nil
// lock, a quarantined server), and name what failed in the hold's own
// words: a semaphore's errors say semaphore or permit and never lock, an
// election's say election or leadership and never lock, a read-write
// lock's say read hold or write hold.
func TestErrorsSayRedlockOnceInTheirHoldsWords(t *testing.T) {
	fc := clock.NewFake(t0)
	lives, quarantinable := livesCluster(fc, 3)
	c := testClient(t, fc, memoryServers(t, fc, 3), WithRetryCount(0))
	q := testClient(t, fc, quarantinable.KeyServers())
	fn := func(context.Context) error { return nil }

	// held takes a hold that must be granted.
	held := func(l *Lock, err error) *Lock {
		t.Helper()
		require.NoError(t, err)
		return l
	}
	// twice releases l twice and returns the second error.
	twice := func(l *Lock) error {
		t.Helper()
		require.NoError(t, l.Release(bg))
		return l.Release(bg)
	}
	// lost lets l run out on the clock, and returns it.
	lost := func(l *Lock) *Lock {
		t.Helper()
		fc.Advance(time.Minute)
		require.ErrorIs(t, l.Err(), ErrLockLost)
		return l
	}
	sem := c.Semaphore("pool", 1)
	rw := c.RWMutex("catalog")
	e := c.Election("primary")
	const ttl = 10 * time.Second

	type errCase struct {
		what string
		kind string // the words of its hold: "lock", "permit", "read", "write", "leadership"
		err  func() error
	}
	cases := []errCase{
		{"TryAcquire of a held lock", "lock", func() error {
			l := held(c.TryAcquire(bg, "job", ttl))
			defer l.Release(bg)
			_, err := c.TryAcquire(bg, "job", ttl)
			return err
		}},
		{"a lock released twice", "lock", func() error { return twice(held(c.TryAcquire(bg, "job", ttl))) }},
		{"a lost lock's release", "lock", func() error { return lost(held(c.TryAcquire(bg, "job", ttl))).Release(bg) }},
		{"a lost lock's extension", "lock", func() error { return lost(held(c.TryAcquire(bg, "job", ttl))).Extend(bg, ttl) }},
		{"a nil lock", "lock", func() error { var l *Lock; return l.Release(bg) }},
		{"a quarantined server", "lock", func() error {
			lives.restart(0)
			lives.restart(1)
			_, err := q.TryAcquire(bg, "job", ttl)
			require.ErrorIs(t, err, ErrQuarantined)
			return err
		}},

		{"TryAcquire of a full semaphore", "permit", func() error {
			l := held(sem.TryAcquire(bg, ttl))
			defer l.Release(bg)
			_, err := sem.TryAcquire(bg, ttl)
			return err
		}},
		{"a permit released twice", "permit", func() error { return twice(held(sem.TryAcquire(bg, ttl))) }},
		{"a released permit's Err", "permit", func() error {
			l := held(sem.TryAcquire(bg, ttl))
			require.NoError(t, l.Release(bg))
			return l.Err()
		}},
		{"a released permit's extension", "permit", func() error {
			l := held(sem.TryAcquire(bg, ttl))
			require.NoError(t, l.Release(bg))
			return l.Extend(bg, ttl)
		}},
		{"a lost permit's release", "permit", func() error { return lost(held(sem.TryAcquire(bg, ttl))).Release(bg) }},
		{"a lost permit's Err", "permit", func() error { return lost(held(sem.TryAcquire(bg, ttl))).Err() }},
		{"a semaphore's Do with a TTL under the drift", "permit", func() error { return sem.Do(bg, time.Millisecond, fn) }},
		{"a semaphore asked with another count", "permit", func() error {
			l := held(sem.TryAcquire(bg, ttl))
			defer l.Release(bg)
			_, err := c.Semaphore("pool", 2).TryAcquire(bg, ttl)
			return err
		}},

		{"TryLock while a reader holds", "write", func() error {
			l := held(rw.TryRLock(bg, ttl))
			defer l.Release(bg)
			_, err := rw.TryLock(bg, ttl)
			return err
		}},
		{"TryRLock while a writer holds", "read", func() error {
			l := held(rw.TryLock(bg, ttl))
			defer l.Release(bg)
			_, err := rw.TryRLock(bg, ttl)
			return err
		}},
		{"a read hold released twice", "read", func() error { return twice(held(rw.TryRLock(bg, ttl))) }},
		{"a write hold lost", "write", func() error { return lost(held(rw.TryLock(bg, ttl))).Release(bg) }},

		{"Campaign refused", "leadership", func() error {
			l := held(e.Campaign(bg, ttl, "a"))
			defer l.Release(bg)
			_, err := e.Campaign(bg, ttl, "b", WithRetryCount(0))
			return err
		}},
		{"a leadership released twice", "leadership", func() error { return twice(held(e.Campaign(bg, ttl, "a"))) }},
		{"a resigned leadership's extension", "leadership", func() error {
			l := held(e.Campaign(bg, ttl, "a"))
			require.NoError(t, l.Release(bg))
			return l.Extend(bg, ttl)
		}},
		{"Campaign with a keep-alive too slow", "leadership", func() error {
			_, err := e.Campaign(bg, ttl, "a", WithKeepAliveInterval(ttl))
			return err
		}},
		{"no leader", "leadership", func() error { _, err := e.Leader(bg); return err }},
	}
	for _, tc := range cases {
		err := tc.err()
		require.Error(t, err, tc.what)
		msg := err.Error()
		assert.True(t, strings.HasPrefix(msg, "redlock: "), "%s: %q", tc.what, msg)
		assert.Equal(t, 1, strings.Count(msg, "redlock:"), "%s: %q says redlock: more than once", tc.what, msg)
		rest := strings.TrimPrefix(msg, "redlock: ")
		switch tc.kind {
		case "permit":
			assert.Regexp(t, `semaphore|permit`, rest, tc.what)
			assert.NotRegexp(t, lockWord, rest, "%s: a semaphore's error says lock", tc.what)
		case "leadership":
			assert.Regexp(t, `election|leader`, rest, tc.what)
			assert.NotRegexp(t, lockWord, rest, "%s: an election's error says lock", tc.what)
		case "read", "write":
			assert.Contains(t, rest, tc.kind+" hold", tc.what)
		default:
			assert.Regexp(t, lockWord, rest, tc.what)
		}
		if errors.Is(err, ErrNotHeld) || errors.Is(err, ErrLockLost) || errors.Is(err, ErrNotAcquired) || errors.Is(err, ErrInvalidArgument) || errors.Is(err, ErrNoLeader) {
			continue
		}
		t.Errorf("%s: %q matches none of the package's sentinels", tc.what, msg)
	}
}

// TestDeadlineExceededIsTheCallersOwn: a server that does not answer
// within the server timeout fails its call with context.DeadlineExceeded,
// which its *ServerError in QuorumError.Failed keeps; the QuorumError
// itself matches a context's error only as the caller's context's, so that
// errors.Is(err, context.DeadlineExceeded) means the caller's deadline
// passed.
func TestDeadlineExceededIsTheCallersOwn(t *testing.T) {
	fc := clock.NewFake(t0)
	// cancel, when set, is called once an attempt's votes are in.
	var cancel atomic.Pointer[context.CancelFunc]
	hooks := Hooks{Attempt: func(context.Context, Attempt) {
		if f := cancel.Load(); f != nil {
			(*f)()
		}
	}}
	// client is a client of three servers, two of which never answer.
	client := func() *Client {
		servers := static.NewCluster(3)
		for _, s := range servers[:2] {
			s.Script(static.OpAcquire, static.Hang)
		}
		return testClient(t, fc, servers.KeyServers(), WithServerTimeout(time.Second), WithHooks(hooks))
	}
	// call runs acquire on its own goroutine, moving the fake clock past
	// each server timeout and retry wait until it returns.
	call := func(acquire func() error) error {
		t.Helper()
		done := make(chan struct{})
		stepped := make(chan struct{})
		go func() {
			defer close(stepped)
			advanceTimersUntil(t, fc, 1, done)
		}()
		err := async(t, func() error {
			defer close(done)
			return acquire()
		})()
		<-stepped
		return err
	}
	perServer := func(t *testing.T, err error) {
		t.Helper()
		var qe *QuorumError
		require.ErrorAs(t, err, &qe)
		require.NotEmpty(t, qe.Failed)
		for _, se := range qe.Failed {
			assert.ErrorIs(t, se, context.DeadlineExceeded, "server %d's own timeout", se.Server)
		}
		var se *ServerError
		require.ErrorAs(t, err, &se, "errors.As finds each server's failure")
		assert.ErrorIs(t, se.Err, context.DeadlineExceeded)
		assert.Contains(t, err.Error(), ": context deadline exceeded", "the message names each server's failure")
	}

	// No deadline: TryAcquire fails as two of three servers time out.
	c := client()
	err := call(func() error { _, err := c.TryAcquire(bg, "job", 10*time.Second); return err })
	require.ErrorIs(t, err, ErrNotAcquired)
	assert.NotErrorIs(t, err, context.DeadlineExceeded, "the caller's context had no deadline")
	assert.NotErrorIs(t, err, context.Canceled)
	perServer(t, err)

	// The caller's deadline passes while it retries.
	ctx, stop := fc.WithTimeout(bg, 5*time.Second)
	defer stop()
	c = client()
	err = call(func() error { _, err := c.Acquire(ctx, "job", 10*time.Second, WithRetryCount(-1)); return err })
	require.ErrorIs(t, err, ErrNotAcquired)
	require.ErrorIs(t, ctx.Err(), context.DeadlineExceeded)
	assert.ErrorIs(t, err, ctx.Err(), "the caller's deadline")
	assert.ErrorIs(t, err, context.DeadlineExceeded)

	// The caller cancels after an attempt whose servers timed out.
	cctx, cancelCall := context.WithCancel(bg)
	defer cancelCall()
	cancel.Store(&cancelCall)
	c = client()
	err = call(func() error { _, err := c.Acquire(cctx, "job", 10*time.Second, WithRetryCount(-1)); return err })
	cancel.Store(nil)
	require.ErrorIs(t, err, ErrNotAcquired)
	assert.ErrorIs(t, err, context.Canceled, "the caller's cancellation")
	assert.NotErrorIs(t, err, context.DeadlineExceeded, "the servers' timeouts are not the caller's")
	perServer(t, err)
}
