package redlock

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goredlock/goredlock/internal/clock"
	"github.com/goredlock/goredlock/keyserver/memory"
	"github.com/goredlock/goredlock/keyserver/static"
)

// ttl3 gives round numbers: keep-alive every 1s, server timeout 150ms,
// drift 32ms, so a lock granted at s is valid until s+2.968s.
const ttl3 = 3 * time.Second

func TestDoRunsFnUnderTheLockAndReleases(t *testing.T) {
	fc := clock.NewFake(t0)
	ks := memoryServers(t, fc, 3)
	c := testClient(t, fc, ks, WithRetryCount(0))
	err := c.Do(bg, "job", ttl3, func(ctx context.Context) error {
		_, err := c.TryAcquire(bg, "job", ttl3)
		assert.ErrorIs(t, err, ErrNotAcquired, "held while fn runs")
		return nil
	})
	require.NoError(t, err)
	l, err := c.TryAcquire(bg, "job", ttl3)
	require.NoError(t, err, "released after fn")
	require.NoError(t, l.Release(bg))
}

func TestDoReturnsFnErrorAndAcquireError(t *testing.T) {
	c, _ := memoryClient(t, WithRetryCount(0))
	boom := errors.New("boom")
	err := c.Do(bg, "job", ttl3, func(context.Context) error { return boom })
	require.ErrorIs(t, err, boom)
	assert.NotErrorIs(t, err, ErrLockLost)

	l, err := c.TryAcquire(bg, "job", ttl3)
	require.NoError(t, err)
	ran := false
	err = c.Do(bg, "job", ttl3, func(context.Context) error { ran = true; return nil })
	require.ErrorIs(t, err, ErrNotAcquired)
	assert.False(t, ran)
	require.NoError(t, l.Release(bg))
}

func TestNestedDoOrSkipIsSkipped(t *testing.T) {
	c, _ := memoryClient(t, WithRetryCount(0))
	innerRan := true
	ran, err := c.DoOrSkip(bg, "job", ttl3, func(ctx context.Context) error {
		var err error
		innerRan, err = c.DoOrSkip(ctx, "job", ttl3, func(context.Context) error {
			t.Error("the inner fn ran while the outer one held the lock")
			return nil
		})
		return err
	})
	require.NoError(t, err)
	assert.True(t, ran)
	assert.False(t, innerRan, "a lock is not re-entrant")
}

func TestDoOrSkipSkipsAtOnceWhenAQuorumRefuses(t *testing.T) {
	for _, tc := range []struct {
		name     string
		rows     [][]bool
		retries  int
		attempts int
	}{
		{"every server refuses: one attempt", [][]bool{{false, false}, {false, false}, {false, false}}, 5, 1},
		// Two refusals and a grant: held by another token, or a split of
		// three contenders; one retry tells, when there is one.
		{"a quorum refuses, one server grants: one retry", [][]bool{{false, false}, {false, false}, {true, true}}, 5, 2},
		{"a quorum refuses, one server grants, no retries", [][]bool{{false, false}, {false, false}, {true, true}}, 0, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fc := clock.NewFake(t0)
			servers := static.Table(tc.rows)
			c := testClient(t, fc, servers.KeyServers(), WithRetryCount(tc.retries))
			res := async(t, func() result {
				ran, err := c.DoOrSkip(bg, "job", ttl3, func(context.Context) error { return nil })
				return result{ran, err}
			})
			sleeps(t, fc, tc.attempts-1)
			r := res()
			require.NoError(t, r.err)
			assert.False(t, r.ran)
			c.bg.Wait()
			for i, s := range servers {
				assert.Equal(t, tc.attempts, s.Count(static.OpAcquire), "server %d", i)
			}
		})
	}
}

func TestDoOrSkipNeverTakesFnErrorsForASkip(t *testing.T) {
	c, _ := memoryClient(t, WithRetryCount(0))
	ran, err := c.DoOrSkip(bg, "job", ttl3, func(context.Context) error {
		return fmt.Errorf("inner lock: %w", ErrNotAcquired)
	})
	assert.True(t, ran)
	require.ErrorIs(t, err, ErrNotAcquired)
}

func TestDoOrSkipReportsServerFailures(t *testing.T) {
	fc := clock.NewFake(t0)
	down := errors.New("connection refused")
	servers := static.NewCluster(3, static.WithAcquire(static.Fail(down)))
	servers[0].Script(static.OpAcquire, static.Deny)
	c := testClient(t, fc, servers.KeyServers(), WithRetryCount(0))
	ran, err := c.DoOrSkip(bg, "job", ttl3, func(context.Context) error { return nil })
	assert.False(t, ran)
	require.ErrorIs(t, err, ErrNotAcquired, "servers down is an error, not a skip")
	require.ErrorIs(t, err, down)

	ctx, cancel := context.WithCancel(bg)
	cancel()
	ran, err = c.DoOrSkip(ctx, "job", ttl3, func(context.Context) error { return nil })
	assert.False(t, ran)
	require.ErrorIs(t, err, context.Canceled, "a cancelled context is an error, not a skip")
}

func TestKeepAliveCadence(t *testing.T) {
	fc := clock.NewFake(t0)
	servers := static.NewCluster(3)
	c := testClient(t, fc, servers.KeyServers())
	release := make(chan struct{})
	done := async(t, func() error {
		return c.Do(bg, "job", ttl3, func(ctx context.Context) error {
			<-release
			return nil
		})
	})
	for i := 1; i <= 6; i++ {
		ds, err := fc.BlockUntilSleepers(1, wait)
		require.NoError(t, err)
		assert.Equal(t, time.Second, ds[0], "wait before extension %d", i)
		c.bg.Wait()
		assert.Equal(t, 3*(i-1), servers.Count(static.OpExtend), "extensions before step %d", i)
		fc.Advance(ds[0])
	}
	_, err := fc.BlockUntilSleepers(1, wait)
	require.NoError(t, err)
	c.bg.Wait()
	assert.Equal(t, 18, servers.Count(static.OpExtend))
	for _, call := range servers[0].Calls() {
		if call.Op == static.OpExtend {
			assert.Equal(t, ttl3, call.TTL)
		}
	}
	close(release)
	require.NoError(t, done())
	c.bg.Wait()
	assert.Equal(t, 3, servers.Count(static.OpRelease))
}

func TestDoHoldsFourTTLsExclusively(t *testing.T) {
	fc := clock.NewFake(t0)
	ks := static.NewCluster(3, static.WithNow(fc.Now)).KeyServers() // unscripted: a real store on fc
	holder := testClient(t, fc, ks)
	rival := testClient(t, fc, ks, WithRetryCount(0))
	release := make(chan struct{})
	var fnErr error
	done := async(t, func() error {
		return holder.Do(bg, "job", ttl3, func(ctx context.Context) error {
			<-release
			fnErr = ctx.Err()
			return nil
		})
	})
	for fc.Now().Sub(t0) < 4*ttl3 {
		sleeps(t, fc, 1)
		_, err := fc.BlockUntilSleepers(1, wait) // the extension is done
		require.NoError(t, err)
		_, err = rival.TryAcquire(bg, "job", ttl3)
		require.ErrorIs(t, err, ErrNotAcquired, "rival at +%v", fc.Now().Sub(t0))
	}
	close(release)
	require.NoError(t, done())
	assert.NoError(t, fnErr, "fn's context stayed alive")
	l, err := rival.TryAcquire(bg, "job", ttl3)
	require.NoError(t, err, "free after Do returned")
	require.NoError(t, l.Release(bg))
}

// lostRun runs Do with fn waiting for its context, moves the clock until fn
// sees it end, and reports when that was, why, and what Do returned.
type lostRun struct {
	at    time.Time
	cause error
	err   error
}

func runUntilLost(t *testing.T, fc *clock.Fake, c *Client, afterStart func()) lostRun {
	t.Helper()
	return runUntilLostStepping(t, fc, c, afterStart, func(seen <-chan struct{}) { advanceUntil(t, fc, seen) })
}

// runUntilLostStepping is runUntilLost with the clock moved by step.
func runUntilLostStepping(t *testing.T, fc *clock.Fake, c *Client, afterStart func(), step func(seen <-chan struct{})) lostRun {
	t.Helper()
	var r lostRun
	seen := make(chan struct{})
	started := make(chan struct{})
	done := async(t, func() error {
		return c.Do(bg, "job", ttl3, func(ctx context.Context) error {
			close(started)
			<-ctx.Done()
			r.at, r.cause = fc.Now(), context.Cause(ctx)
			close(seen)
			return ctx.Err()
		})
	})
	<-started
	afterStart()
	step(seen)
	r.err = done()
	return r
}

func TestMajorityExtensionFailureCancelsFnBeforeValidityEnds(t *testing.T) {
	fc := clock.NewFake(t0)
	servers := static.NewCluster(3)
	// Each extension round votes on server 0: a call, or the breaker's
	// refusal once it opens. The calls to server 2 are no count of the
	// rounds: one still waiting for the previous call when the fake clock
	// passes its deadline is not sent.
	var rounds atomic.Int32
	hooks := Hooks{ServerFailed: func(_ context.Context, op, _ string, server int, _ error) {
		if op == "extend" && server == 0 {
			rounds.Add(1)
		}
	}}
	c := testClient(t, fc, servers.KeyServers(), WithHooks(hooks))
	down := errors.New("connection refused")
	r := runUntilLost(t, fc, c, func() {
		servers[0].Script(static.OpExtend, static.Fail(down))
		servers[1].Script(static.OpExtend, static.Fail(down))
	})
	until := t0.Add(ttl3 - drift(ttl3, DefaultDriftFactor))
	assert.True(t, r.at.Before(until), "fn told at +%v, validity ended at +%v", r.at.Sub(t0), until.Sub(t0))
	assert.True(t, r.at.After(t0.Add(2*time.Second)), "fn told at +%v, too early: retries were possible", r.at.Sub(t0))
	require.ErrorIs(t, r.cause, ErrLockLost)
	require.ErrorIs(t, r.err, ErrLockLost)
	c.bg.Wait()
	assert.Greater(t, int(rounds.Load()), 5, "failed extensions are retried")
}

func TestExtensionTakenByAnotherHolderCancelsFnAtOnce(t *testing.T) {
	fc := clock.NewFake(t0)
	servers := static.NewCluster(3)
	c := testClient(t, fc, servers.KeyServers())
	r := runUntilLost(t, fc, c, func() {
		servers[0].Script(static.OpExtend, static.Deny)
		servers[1].Script(static.OpExtend, static.Deny)
	})
	assert.Equal(t, t0.Add(time.Second), r.at, "lost at the first refused extension")
	require.ErrorIs(t, r.cause, ErrLockLost)
	require.ErrorIs(t, r.err, ErrLockLost)
}

// extensions counts the extensions granted, through hooks. The calls
// that reached the servers are no count of them: the fake clock may pass
// the deadline of a call that a quorum's answers made moot before it is
// sent.
type extensions struct {
	n     atomic.Int32
	hooks Hooks
}

func countExtensions() *extensions {
	e := &extensions{}
	e.hooks.Extended = func(_ context.Context, _ string, err error) {
		if err == nil {
			e.n.Add(1)
		}
	}
	return e
}

func TestMaxExtensionsStopsKeepAlive(t *testing.T) {
	fc := clock.NewFake(t0)
	servers := static.NewCluster(3)
	extended := countExtensions()
	c := testClient(t, fc, servers.KeyServers(), WithMaxExtensions(2), WithHooks(extended.hooks))
	r := runUntilLost(t, fc, c, func() {})
	c.bg.Wait()
	assert.EqualValues(t, 2, extended.n.Load(), "two extensions")
	assert.LessOrEqual(t, servers.Count(static.OpExtend), 3*2, "on three servers")
	until := t0.Add(2*time.Second + ttl3 - drift(ttl3, DefaultDriftFactor))
	assert.True(t, r.at.Before(until), "fn told at +%v, validity ended at +%v", r.at.Sub(t0), until.Sub(t0))
	require.ErrorIs(t, r.cause, ErrLockLost)
	require.ErrorIs(t, r.err, ErrLockLost)
}

func TestMaxHoldStopsKeepAlive(t *testing.T) {
	fc := clock.NewFake(t0)
	servers := static.NewCluster(3)
	extended := countExtensions()
	c := testClient(t, fc, servers.KeyServers(), WithMaxHold(5*time.Second), WithHooks(extended.hooks))
	r := runUntilLost(t, fc, c, func() {})
	assert.True(t, r.at.Before(t0.Add(5*time.Second)), "held past the cap: told at +%v", r.at.Sub(t0))
	require.ErrorIs(t, r.err, ErrLockLost)
	c.bg.Wait()
	assert.EqualValues(t, 2, extended.n.Load(), "extensions at +1s and +2s only")
	assert.LessOrEqual(t, servers.Count(static.OpExtend), 3*2)
}

func TestPanicInFnReleasesTheLock(t *testing.T) {
	c, _ := memoryClient(t, WithRetryCount(0))
	var recovered any
	func() {
		defer func() { recovered = recover() }()
		_ = c.Do(bg, "job", ttl3, func(context.Context) error { panic("boom") })
	}()
	assert.Equal(t, "boom", recovered, "the panic is raised again")
	l, err := c.TryAcquire(bg, "job", ttl3)
	require.NoError(t, err, "released despite the panic")
	require.NoError(t, l.Release(bg))
}

func TestParentCancellationReleasesTheLock(t *testing.T) {
	c, _ := memoryClient(t, WithRetryCount(0))
	ctx, cancel := context.WithCancel(bg)
	started := make(chan struct{})
	done := async(t, func() error {
		return c.Do(ctx, "job", ttl3, func(ctx context.Context) error {
			close(started)
			<-ctx.Done()
			return ctx.Err()
		})
	})
	<-started
	cancel()
	err := done()
	require.ErrorIs(t, err, context.Canceled)
	assert.NotErrorIs(t, err, ErrLockLost)
	l, err := c.TryAcquire(bg, "job", ttl3)
	require.NoError(t, err, "released after the parent was cancelled")
	require.NoError(t, l.Release(bg))
}

func TestKeepAliveReturns(t *testing.T) {
	fc := clock.NewFake(t0)
	c := testClient(t, fc, static.NewCluster(3).KeyServers())

	l, err := c.TryAcquire(bg, "a", ttl3)
	require.NoError(t, err)
	ka := async(t, func() error { return l.KeepAlive(bg) })
	_, err = fc.BlockUntilSleepers(1, wait)
	require.NoError(t, err)
	require.NoError(t, l.Release(bg))
	assert.NoError(t, ka(), "nil once released")

	l, err = c.TryAcquire(bg, "b", ttl3)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(bg)
	ka = async(t, func() error { return l.KeepAlive(ctx) })
	_, err = fc.BlockUntilSleepers(1, wait)
	require.NoError(t, err)
	cancel()
	assert.ErrorIs(t, ka(), context.Canceled)
	assert.NoError(t, l.Err(), "still held after KeepAlive's context ended")
	require.NoError(t, l.Release(bg))

	c2 := testClient(t, fc, static.NewCluster(3).KeyServers(), WithKeepAliveInterval(ttl3))
	l, err = c2.TryAcquire(bg, "c", ttl3)
	require.NoError(t, err)
	assert.ErrorIs(t, l.KeepAlive(bg), ErrInvalidArgument, "an interval longer than the validity")
	require.NoError(t, l.Release(bg))
}

func TestDoRefusesATTLTooShortToKeepAlive(t *testing.T) {
	fc := clock.NewFake(t0)
	servers := static.NewCluster(3)
	c := testClient(t, fc, servers.KeyServers(), WithKeepAliveInterval(2900*time.Millisecond))
	err := c.Do(bg, "job", ttl3, func(context.Context) error { return nil })
	require.ErrorIs(t, err, ErrInvalidArgument)
	assert.Contains(t, err.Error(), "keep-alive interval 2.9s")
	_, err = c.DoOrSkip(bg, "job", ttl3, func(context.Context) error { return nil })
	require.ErrorIs(t, err, ErrInvalidArgument)
	assert.Equal(t, 0, servers.Count(static.OpAcquire), "refused before asking any server")
}

// TestCloseEndsDo: Close while Do's fn runs cancels fn's context with the
// cause ErrClosed, waits for fn to return and for the release, and Do
// returns an error matching ErrClosed; a Do still waiting for the lock
// ends with ErrClosed; after Close the keys are gone.
func TestCloseEndsDo(t *testing.T) {
	fc := clock.NewFake(t0)
	ks := memoryServers(t, fc, 3)
	c, err := New(ks, withClock(fc), WithRetryCount(-1))
	require.NoError(t, err)
	running := make(chan struct{})
	cause := make(chan error, 1)
	done := make(chan error, 1)
	go func() {
		done <- c.Do(bg, "job", 30*time.Second, func(ctx context.Context) error {
			close(running)
			<-ctx.Done()
			cause <- context.Cause(ctx)
			return ctx.Err()
		})
	}()
	<-running
	waiting := make(chan error, 1)
	go func() { waiting <- c.Do(bg, "job", 30*time.Second, func(context.Context) error { return nil }) }()
	_, err = fc.BlockUntilSleepers(1, wait) // the second Do waits in line
	require.NoError(t, err)

	closed := async(t, func() error { return c.Close() })
	require.NoError(t, closed())
	assert.ErrorIs(t, <-cause, ErrClosed, "fn's context's cause")
	err = <-done
	assert.ErrorIs(t, err, ErrClosed)
	assert.ErrorIs(t, err, context.Canceled, "fn's own error")
	assert.ErrorIs(t, <-waiting, ErrClosed, "the Do that waited")
	for i, s := range ks {
		assert.Zero(t, s.(*memory.Server).Len(), "server %d kept a key", i)
	}
	assert.ErrorIs(t, c.Do(bg, "job", time.Second, func(context.Context) error { return nil }), ErrClosed, "Do after Close")
	var nilClient *Client
	assert.NoError(t, nilClient.Close(), "Close on the nil Client a failed New returns")
}
