package redlock

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-multierror"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goredlock/goredlock/internal/check"
	"github.com/goredlock/goredlock/internal/clock"
	"github.com/goredlock/goredlock/keyserver"
	"github.com/goredlock/goredlock/keyserver/memory"
	"github.com/goredlock/goredlock/keyserver/static"
)

func TestQuorumSizes(t *testing.T) {
	for n, want := range map[int]int{1: 1, 2: 2, 3: 2, 4: 3, 5: 3, 6: 4, 7: 4, 8: 5, 9: 5} {
		c, err := New(static.NewCluster(n).KeyServers())
		require.NoError(t, err)
		assert.Equal(t, want, c.Quorum(), "quorum of %d servers", n)
	}
}

// TestDecisionTable holds the quorum arithmetic: when each rule stops
// waiting for votes, and what the votes mean.
func TestDecisionTable(t *testing.T) {
	tests := []struct {
		n, granted, refused, failed int
		early, untilHeld, won, held bool
	}{
		{1, 0, 0, 0, false, false, false, false},
		{1, 1, 0, 0, true, true, true, false},
		{1, 0, 1, 0, true, true, false, true},
		{1, 0, 0, 1, true, true, false, false},
		{2, 1, 0, 0, false, false, false, false},
		{2, 1, 1, 0, true, true, false, false},
		{2, 0, 2, 0, true, true, false, true},
		{3, 2, 0, 0, true, true, true, false},
		{3, 1, 1, 0, false, false, false, false},
		{3, 0, 1, 1, true, false, false, false}, // the third may still refuse
		{3, 0, 2, 0, true, false, false, true},  // held: but did we get the third?
		{3, 1, 1, 1, true, true, false, false},
		{4, 2, 1, 0, false, false, false, false},
		{4, 2, 2, 0, true, true, false, false}, // even N: 2 refusals are no quorum
		{4, 0, 2, 1, true, false, false, false},
		{4, 0, 3, 0, true, false, false, true},
		{4, 0, 4, 0, true, true, false, true},
		{3, 1, 2, 0, true, true, false, true}, // a split, or held: one retry tells
		{5, 3, 0, 0, true, true, true, false},
		{5, 2, 2, 0, false, false, false, false},
		{5, 2, 1, 2, true, true, false, false},
		{5, 0, 2, 2, true, false, false, false},
		{5, 0, 3, 1, true, false, false, true},
		{9, 5, 0, 0, true, true, true, false},
		{9, 4, 4, 0, false, false, false, false},
		{9, 4, 0, 5, true, true, false, false},
	}
	// Grants not counted for the quarantine (rule 19): with no other
	// grant, the refusals and the servers that lost their data since the
	// holder's grant are held elsewhere, and a call waits to tell.
	quarantined := []struct {
		n, granted, refused, quarantined, failed int
		early, untilHeld, held                   bool
	}{
		{5, 0, 0, 3, 0, false, false, false}, // the two out may refuse
		{5, 0, 1, 3, 0, false, false, true},  // so far
		{5, 0, 1, 3, 1, true, true, true},    // the one that failed could not know more
		{5, 0, 2, 3, 0, true, true, true},    // every server that could know says held
		{5, 1, 1, 3, 0, true, true, false},   // one that kept its data granted: no verdict
		{5, 0, 0, 3, 2, true, true, false},   // nobody who could know answered
		{5, 0, 0, 5, 0, true, true, false},
		{3, 0, 1, 2, 0, true, true, true},
		{3, 0, 0, 2, 0, false, false, false},
		{3, 0, 0, 2, 1, true, true, false},
	}
	for _, tc := range quarantined {
		tl := tally{n: tc.n, granted: tc.granted, refused: tc.refused}
		for i := 0; i < tc.quarantined; i++ {
			tl.add(vote{server: i, err: fmt.Errorf("%w: back 1s ago", ErrQuarantined)})
		}
		for i := 0; i < tc.failed; i++ {
			tl.add(vote{server: tc.quarantined + i, err: errors.New("x")})
		}
		assert.Equal(t, tc.early, tl.decided(earliest), "%+v decided early", tc)
		assert.Equal(t, tc.untilHeld, tl.decided(untilKnownHeld), "%+v decided until known held", tc)
		assert.Equal(t, tc.held, tl.heldElsewhere(), "%+v held elsewhere", tc)
	}
	for _, tc := range tests {
		tl := tally{n: tc.n, granted: tc.granted, refused: tc.refused}
		for i := 0; i < tc.failed; i++ {
			tl.add(vote{server: i, err: errors.New("x")})
		}
		assert.Equal(t, tc.early, tl.decided(earliest), "%+v decided early", tc)
		assert.Equal(t, tc.untilHeld, tl.decided(untilKnownHeld), "%+v decided until known held", tc)
		assert.Equal(t, tc.won, tl.won(), "%+v won", tc)
		assert.Equal(t, tc.held, tl.heldElsewhere(), "%+v held elsewhere", tc)
	}
}

func TestPermanentFailuresEndRetriesOnlyWhenNoQuorumIsLeft(t *testing.T) {
	for _, tc := range []struct {
		n, permanent int
		hopeless     bool
	}{{1, 1, true}, {3, 1, false}, {3, 2, true}, {4, 1, false}, {4, 2, true}, {5, 2, false}, {5, 3, true}} {
		tl := tally{n: tc.n}
		for i := 0; i < tc.permanent; i++ {
			tl.add(vote{server: i, err: check.Permanent(errors.New("WRONGTYPE"))})
		}
		tl.add(vote{server: tc.n - 1, err: errors.New("i/o timeout")})
		assert.Equal(t, tc.hopeless, tl.hopeless(), "%+v", tc)
	}
}

func TestValidityArithmetic(t *testing.T) {
	tests := []struct {
		ttl, elapsed time.Duration
		factor       float64
		want         time.Duration
	}{
		{10 * time.Second, 0, 0.01, 10*time.Second - 102*time.Millisecond},
		{10 * time.Second, time.Second, 0.01, 9*time.Second - 102*time.Millisecond},
		{time.Second, 0, 0, 998 * time.Millisecond},
		{time.Second, 0, 0.02, 978 * time.Millisecond},
		{100 * time.Millisecond, 97 * time.Millisecond, 0.01, 0},
	}
	for _, tc := range tests {
		assert.Equal(t, tc.want, validity(tc.ttl, tc.elapsed, tc.factor), "%+v", tc)
	}
}

func TestAllAcceptAllRefuse(t *testing.T) {
	for n := 1; n <= 9; n++ {
		t.Run(fmt.Sprintf("N=%d", n), func(t *testing.T) {
			fc := clock.NewFake(t0)
			yes, no := make([][]bool, n), make([][]bool, n)
			for i := range yes {
				yes[i], no[i] = []bool{true, true}, []bool{false, false}
			}
			l, err := testClient(t, fc, static.Table(yes).KeyServers()).TryAcquire(bg, "job", time.Second)
			require.NoError(t, err)
			require.NoError(t, l.Release(bg))

			_, err = testClient(t, fc, static.Table(no).KeyServers()).TryAcquire(bg, "job", time.Second)
			require.ErrorIs(t, err, ErrNotAcquired)
		})
	}
}

func TestMajorityDecides(t *testing.T) {
	tests := []struct {
		rows    [][]bool
		granted bool
	}{
		{[][]bool{{true, true}, {false, false}, {true, true}, {false, false}, {true, true}}, true},
		{[][]bool{{true, true}, {false, false}, {true, true}, {false, false}, {false, false}}, false},
		{[][]bool{{true, true}, {false, false}, {true, true}}, true},
		{[][]bool{{true, true}, {true, true}, {false, false}, {false, false}}, false},
	}
	for _, tc := range tests {
		fc := clock.NewFake(t0)
		_, err := testClient(t, fc, static.Table(tc.rows).KeyServers()).TryAcquire(bg, "job", time.Second)
		if tc.granted {
			assert.NoError(t, err, "%v", tc.rows)
		} else {
			assert.ErrorIs(t, err, ErrNotAcquired, "%v", tc.rows)
		}
	}
}

// TestFailedAttemptReleasesWhereItMayHaveStored: a failed attempt releases
// its token on every server that granted it or failed (the call may have
// run there), and not on those that refused it (the script ran and stored
// nothing): under contention those releases were as many writes again.
func TestFailedAttemptReleasesWhereItMayHaveStored(t *testing.T) {
	fc := clock.NewFake(t0)
	servers := []*static.Server{
		static.Fixed(true, true), static.Fixed(true, true),
		static.New(static.WithAcquire(static.Fail(errors.New("timeout")))),
		static.Fixed(false, false), static.Fixed(false, false),
	}
	ks := make([]keyserver.KeyServer, len(servers))
	for i, s := range servers {
		ks[i] = s
	}
	c := testClient(t, fc, ks)
	_, err := c.TryAcquire(bg, "job", time.Second)
	require.ErrorIs(t, err, ErrNotAcquired)
	c.bg.Wait() // servers not waited for release in the background
	token := servers[0].Calls()[0].Token
	for i, s := range servers {
		calls := s.Calls()
		assert.Equal(t, static.OpAcquire, calls[0].Op, "server %d", i)
		if i >= 3 {
			assert.Len(t, calls, 1, "server %d refused, and was released", i)
			continue
		}
		require.Len(t, calls, 2, "server %d", i)
		assert.Equal(t, static.OpRelease, calls[1].Op, "server %d", i)
		assert.Equal(t, token, calls[1].Token, "server %d released another token", i)
	}
}

func TestLateGrantIsUndone(t *testing.T) {
	fc := clock.NewFake(t0)
	gate := make(chan struct{})
	late := static.New(static.WithBefore(func(_ context.Context, c static.Call) {
		if c.Op == static.OpAcquire {
			<-gate
		}
	}))
	servers := static.Cluster{static.Fixed(false, false), static.Fixed(false, false), late}
	c := testClient(t, fc, servers.KeyServers(), WithServerTimeout(time.Hour), WithLossMargin(time.Millisecond))
	_, err := c.TryAcquire(bg, "job", time.Second)
	require.ErrorIs(t, err, ErrNotAcquired)
	close(gate) // the late server now grants, after the attempt failed
	c.bg.Wait()
	calls := late.Calls()
	require.Len(t, calls, 2)
	assert.True(t, calls[0].OK, "the late Acquire granted")
	assert.Equal(t, static.OpRelease, calls[1].Op)
	assert.True(t, calls[1].OK, "the late grant was released")
}

func TestRetryAttemptCounts(t *testing.T) {
	for _, retries := range []int{0, 1, 5} {
		t.Run(fmt.Sprint(retries), func(t *testing.T) {
			fc := clock.NewFake(t0)
			servers := static.Table([][]bool{{false, false}, {false, false}, {false, false}})
			// Servers that keep no line, polled every retry delay exactly.
			ks := []keyserver.KeyServer{hidden{servers[0]}, hidden{servers[1]}, hidden{servers[2]}}
			c := testClient(t, fc, ks, WithRetryCount(retries), WithRetryJitter(0))
			res := async(t, func() error { _, err := c.Acquire(bg, "job", time.Second); return err })
			sleeps(t, fc, retries)
			err := res()
			require.ErrorIs(t, err, ErrNotAcquired)
			require.ErrorIs(t, err, ErrHeldElsewhere)
			var qe *QuorumError
			require.ErrorAs(t, err, &qe)
			assert.Equal(t, retries+1, qe.Attempts)
			assert.Equal(t, "acquire", qe.Op)
			assert.Equal(t, "job", qe.Name)
			c.bg.Wait() // the third server's answers were not waited for
			for i, s := range servers {
				assert.Equal(t, retries+1, s.Count(static.OpAcquire), "server %d", i)
			}
		})
	}
}

func TestRetryUntilContextEnds(t *testing.T) {
	fc := clock.NewFake(t0)
	servers := static.Table([][]bool{{false, false}, {false, false}, {false, false}})
	c := testClient(t, fc, servers.KeyServers(), WithRetryCount(-1))
	ctx, cancel := context.WithCancel(bg)
	res := async(t, func() error { _, err := c.Acquire(ctx, "job", time.Second); return err })
	sleeps(t, fc, 25)
	_, err := fc.BlockUntilSleepers(1, wait) // the 26th attempt is done
	require.NoError(t, err)
	cancel()
	err = res()
	require.ErrorIs(t, err, ErrNotAcquired)
	require.ErrorIs(t, err, context.Canceled)
	c.bg.Wait()
	// 26 attempts, each decided by two refusals at least: a server still
	// unasked at the verdict is not asked (a failed attempt sends nothing
	// more).
	total := 0
	for _, s := range servers {
		assert.LessOrEqual(t, s.Count(static.OpAcquire), 26)
		total += s.Count(static.OpAcquire)
	}
	assert.GreaterOrEqual(t, total, 2*26)
}

func TestRetryWaitsWithinJitter(t *testing.T) {
	fc := clock.NewFake(t0)
	c := testClient(t, fc, []keyserver.KeyServer{hidden{static.Fixed(false, false)}},
		WithRetryCount(-1), WithRetryDelay(200*time.Millisecond), WithRetryJitter(100*time.Millisecond))
	ctx, cancel := context.WithCancel(bg)
	res := async(t, func() error { _, err := c.Acquire(ctx, "job", time.Second); return err })
	waits := sleeps(t, fc, 60)
	cancel()
	require.ErrorIs(t, res(), ErrNotAcquired)
	lo, hi := waits[0], waits[0]
	for _, w := range waits {
		assert.GreaterOrEqual(t, w, 100*time.Millisecond)
		assert.LessOrEqual(t, w, 300*time.Millisecond)
		lo, hi = min(lo, w), max(hi, w)
	}
	// 60 uniform draws all within 20 ms of the mean: probability ~1e-13.
	assert.Less(t, lo, 180*time.Millisecond, "waits are not spread")
	assert.Greater(t, hi, 220*time.Millisecond, "waits are not spread")
}

func TestRetryWaitBounds(t *testing.T) {
	tests := []struct {
		delay, jitter time.Duration
		draw          func(n int64) int64
		want          time.Duration
	}{
		{200 * time.Millisecond, 100 * time.Millisecond, func(int64) int64 { return 0 }, 100 * time.Millisecond},
		{200 * time.Millisecond, 100 * time.Millisecond, func(n int64) int64 { return n - 1 }, 300 * time.Millisecond},
		{200 * time.Millisecond, 0, func(int64) int64 { return 0 }, 200 * time.Millisecond}, // 0: no jitter
		{50 * time.Millisecond, 50 * time.Millisecond, func(int64) int64 { return 0 }, 0},
	}
	for _, tc := range tests {
		c, err := New(static.NewCluster(1).KeyServers(), WithRetryDelay(tc.delay), WithRetryJitter(tc.jitter))
		require.NoError(t, err)
		c.randInt64N = tc.draw
		assert.Equal(t, tc.want, c.retryWait(), "%v±%v", tc.delay, tc.jitter)
	}
	c, err := New(static.NewCluster(1).KeyServers(), WithRetryDelay(80*time.Millisecond))
	require.NoError(t, err)
	assert.Equal(t, 40*time.Millisecond, c.jitter(), "default jitter is half the delay")
}

func TestContextEndsBeforeAcquire(t *testing.T) {
	for _, mk := range []func() (context.Context, context.CancelFunc){
		func() (context.Context, context.CancelFunc) { return context.WithCancel(bg) },
		func() (context.Context, context.CancelFunc) { return context.WithTimeout(bg, 0) },
	} {
		ctx, cancel := mk()
		cancel()
		fc := clock.NewFake(t0)
		servers := static.NewCluster(3)
		_, err := testClient(t, fc, servers.KeyServers()).Acquire(ctx, "job", time.Second)
		require.ErrorIs(t, err, ErrNotAcquired)
		require.ErrorIs(t, err, ctx.Err())
		assert.Equal(t, 0, servers.Count(static.OpAcquire))
	}
}

func TestContextEndsDuringRetryWait(t *testing.T) {
	fc := clock.NewFake(t0)
	servers := static.Table([][]bool{{false, false}, {false, false}, {false, false}})
	c := testClient(t, fc, servers.KeyServers())
	ctx, cancel := context.WithCancelCause(bg)
	res := async(t, func() error { _, err := c.Acquire(ctx, "job", time.Second); return err })
	_, err := fc.BlockUntilSleepers(1, wait)
	require.NoError(t, err)
	cancel(errors.New("shutting down"))
	err = res()
	require.ErrorIs(t, err, ErrNotAcquired)
	require.ErrorIs(t, err, context.Canceled)
}

func TestServerErrorsAreReachable(t *testing.T) {
	fc := clock.NewFake(t0)
	errA, errB := errors.New("connection refused"), errors.New("WRONGTYPE")
	servers := static.Cluster{
		static.New(static.WithAcquire(static.Fail(errA))),
		static.Fixed(true, true),
		static.New(static.WithAcquire(static.Fail(errB))),
	}
	_, err := testClient(t, fc, servers.KeyServers()).TryAcquire(bg, "job", time.Second)
	require.ErrorIs(t, err, ErrNotAcquired)
	require.ErrorIs(t, err, errA)
	require.ErrorIs(t, err, errB)
	var se *ServerError
	require.ErrorAs(t, err, &se)
	var all *multierror.Error
	require.ErrorAs(t, err, &all)
	got := map[int]error{}
	for _, e := range all.Errors {
		require.ErrorAs(t, e, &se)
		got[se.Server] = se.Err
	}
	assert.Equal(t, map[int]error{0: errA, 2: errB}, got)
	assert.Contains(t, err.Error(), "server 0: connection refused")
	assert.NotContains(t, err.Error(), "\n")
}

func TestNoGrantWhenServersAnswerTooLate(t *testing.T) {
	const ttl, margin = 10 * time.Second, 5 * time.Millisecond
	allowance := drift(ttl, DefaultDriftFactor)
	tests := []struct {
		took    time.Duration
		granted bool
	}{
		{ttl + time.Second, false},
		{ttl, false},
		{ttl - allowance, false},          // validity exactly zero
		{ttl - allowance - margin, false}, // validity exactly the loss margin
		{ttl - allowance - margin - time.Millisecond, true},
	}
	for _, tc := range tests {
		t.Run(tc.took.String(), func(t *testing.T) {
			fc := clock.NewFake(t0)
			var once sync.Once
			slow := static.WithBefore(func(_ context.Context, c static.Call) {
				if c.Op == static.OpAcquire {
					once.Do(func() { fc.Advance(tc.took) })
				}
			})
			servers := static.NewCluster(3, slow)
			c := testClient(t, fc, servers.KeyServers(), WithServerTimeout(time.Hour), WithLossMargin(margin))
			l, err := c.TryAcquire(bg, "job", ttl)
			if !tc.granted {
				require.ErrorIs(t, err, ErrNotAcquired)
				c.bg.Wait()
				assert.Equal(t, 3, servers.Count(static.OpRelease), "a late grant is released everywhere")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, t0.Add(ttl-allowance), l.Until())
			assert.NoError(t, l.Err())
		})
	}
}

func TestUntilIsStartPlusTTLMinusDrift(t *testing.T) {
	fc := clock.NewFake(t0)
	var once sync.Once
	servers := static.NewCluster(3, static.WithBefore(func(context.Context, static.Call) {
		once.Do(func() { fc.Advance(time.Second) }) // the servers take a second
	}))
	c := testClient(t, fc, servers.KeyServers(), WithServerTimeout(2*time.Second), WithDriftFactor(0.02))
	l, err := c.TryAcquire(bg, "job", 10*time.Second)
	require.NoError(t, err)
	assert.Equal(t, t0.Add(10*time.Second-202*time.Millisecond), l.Until())
}

func TestEarlyReturnWhileMinorityHangs(t *testing.T) {
	fc := clock.NewFake(t0)
	servers := static.NewCluster(5)
	servers[1].Script(static.OpAcquire, static.Hang)
	servers[3].Script(static.OpAcquire, static.Hang)
	c := testClient(t, fc, servers.KeyServers(), WithServerTimeout(time.Second))
	res := async(t, func() lockResult { l, err := c.TryAcquire(bg, "job", 10*time.Second); return lockResult{l, err} })()
	require.NoError(t, res.err, "granted by 3 of 5 without waiting for the 2 that hang")
	assert.Equal(t, t0, fc.Now(), "no time passed: nobody waited for the server timeout")

	// The refusing side decides early too.
	servers2 := static.Table([][]bool{{false, false}, {false, false}, {false, false}, {true, true}, {true, true}})
	servers2[3].Script(static.OpAcquire, static.Hang)
	c2 := testClient(t, fc, servers2.KeyServers(), WithServerTimeout(time.Second))
	err := async(t, func() error { _, err := c2.TryAcquire(bg, "job", 10*time.Second); return err })()
	require.ErrorIs(t, err, ErrNotAcquired)

	fc.Advance(time.Second) // the hanging calls time out in the background
	c.bg.Wait()
	c2.bg.Wait()
	// Asked at most once; not at all when the verdict came before its call
	// was sent.
	assert.LessOrEqual(t, servers[1].Count(static.OpAcquire), 1)
	// The hanging server's acquire is made, or not at all when the
	// verdict came before its call was sent (a failed attempt sends
	// nothing more); either way a release follows (rule 1).
	calls := servers2[3].Calls()
	require.NotEmpty(t, calls)
	last := calls[len(calls)-1]
	assert.Equal(t, static.OpRelease, last.Op, "the straggler is released after its own call ended: %+v", calls)
	if len(calls) == 2 {
		assert.ErrorIs(t, calls[0].Err, context.DeadlineExceeded)
	}
	assert.LessOrEqual(t, len(calls), 2)
	require.NoError(t, res.lock.Release(bg))
}

func TestExtendMovesUntil(t *testing.T) {
	fc := clock.NewFake(t0)
	servers := static.NewCluster(3)
	c := testClient(t, fc, servers.KeyServers())
	l, err := c.TryAcquire(bg, "job", 10*time.Second)
	require.NoError(t, err)
	fc.Advance(4 * time.Second)
	require.NoError(t, l.Extend(bg, 20*time.Second))
	c.bg.Wait() // the third server's answer was not waited for
	assert.Equal(t, t0.Add(24*time.Second-202*time.Millisecond), l.Until())
	fc.Advance(15 * time.Second) // past the first Until
	assert.NoError(t, l.Err())
	assert.Equal(t, 3, servers.Count(static.OpExtend))
	require.NoError(t, l.Release(bg))
}

func TestExtendOfExpiredLockIsRefusedWithoutContact(t *testing.T) {
	fc := clock.NewFake(t0)
	servers := static.NewCluster(3)
	l, err := testClient(t, fc, servers.KeyServers()).TryAcquire(bg, "job", time.Second)
	require.NoError(t, err)
	fc.Advance(time.Second - drift(time.Second, DefaultDriftFactor)) // exactly Until
	err = l.Extend(bg, time.Second)
	require.ErrorIs(t, err, ErrNotHeld)
	assert.Equal(t, 0, servers.Count(static.OpExtend))
	assert.ErrorIs(t, l.Err(), ErrLockLost)
}

func TestExtendNotGranted(t *testing.T) {
	fc := clock.NewFake(t0)
	servers := static.NewCluster(3)
	c := testClient(t, fc, servers.KeyServers())
	l, err := c.TryAcquire(bg, "job", 10*time.Second)
	require.NoError(t, err)
	until := l.Until()

	// Two servers down: not granted, but the lock is still valid.
	down := errors.New("down")
	servers[0].Script(static.OpExtend, static.Fail(down))
	servers[1].Script(static.OpExtend, static.Fail(down))
	err = l.Extend(bg, 10*time.Second)
	require.ErrorIs(t, err, ErrNotAcquired)
	require.ErrorIs(t, err, down)
	assert.NoError(t, l.Err())
	assert.Equal(t, until, l.Until())

	// Two servers held by someone else: the lock is lost at once.
	servers[0].Script(static.OpExtend, static.Deny)
	servers[1].Script(static.OpExtend, static.Deny)
	err = l.Extend(bg, 10*time.Second)
	require.ErrorIs(t, err, ErrLockLost)
	assert.ErrorIs(t, l.Err(), ErrLockLost)
	assert.True(t, closed(l.Done()))
}

func TestDoneAndErrAfterRelease(t *testing.T) {
	fc := clock.NewFake(t0)
	servers := static.NewCluster(3)
	c := testClient(t, fc, servers.KeyServers())
	l, err := c.TryAcquire(bg, "job", time.Second)
	require.NoError(t, err)
	assert.NoError(t, l.Err())
	assert.False(t, closed(l.Done()))
	require.NoError(t, l.Release(bg))
	c.bg.Wait()
	assert.True(t, closed(l.Done()))
	assert.ErrorIs(t, l.Err(), ErrNotHeld)
	assert.ErrorIs(t, l.Release(bg), ErrNotHeld, "a second Release")
	assert.Equal(t, 3, servers.Count(static.OpRelease), "a second Release contacts nobody")
	assert.ErrorIs(t, l.Extend(bg, time.Second), ErrNotHeld)
	fc.Advance(time.Hour)
	assert.ErrorIs(t, l.Err(), ErrNotHeld, "a released lock does not turn lost")
}

func TestDoneAndErrAfterExpiry(t *testing.T) {
	fc := clock.NewFake(t0)
	l, err := testClient(t, fc, static.NewCluster(3).KeyServers()).TryAcquire(bg, "job", time.Second)
	require.NoError(t, err)
	margin := 2 * (time.Second / 20) // two server timeouts
	fc.Advance(l.Until().Sub(fc.Now()) - margin - 1)
	assert.NoError(t, l.Err(), "held until Until less the loss margin")
	fc.Advance(1)
	select {
	case <-l.Done(): // closed by the expiry timer alone
	case <-time.After(wait):
		t.Fatal("Done not closed at Until less the loss margin")
	}
	assert.ErrorIs(t, l.Err(), ErrLockLost)
	assert.ErrorIs(t, l.Release(bg), ErrNotHeld)
	assert.ErrorIs(t, l.Err(), ErrLockLost, "a lost lock stays lost after Release")
}

func TestReleaseOutcomes(t *testing.T) {
	down := errors.New("down")
	tests := []struct {
		name     string
		replies  []static.Reply
		notHeld  bool
		errorOut bool
	}{
		{"quorum deleted", []static.Reply{static.Grant, static.Deny, static.Grant}, false, false},
		{"not ours on a quorum", []static.Reply{static.Deny, static.Deny, static.Grant}, true, true},
		{"servers failed", []static.Reply{static.Fail(down), static.Fail(down), static.Grant}, false, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fc := clock.NewFake(t0)
			servers := static.NewCluster(3)
			l, err := testClient(t, fc, servers.KeyServers()).TryAcquire(bg, "job", time.Second)
			require.NoError(t, err)
			for i, r := range tc.replies {
				servers[i].Script(static.OpRelease, r)
			}
			err = l.Release(bg)
			if !tc.errorOut {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.Equal(t, tc.notHeld, errors.Is(err, ErrNotHeld), "%v", err)
			if !tc.notHeld {
				assert.ErrorIs(t, err, down)
			}
			assert.True(t, closed(l.Done()), "Release is final")
		})
	}
}

func TestFourConcurrentTakersOneWins(t *testing.T) {
	for round := 0; round < 20; round++ {
		var servers []keyserver.KeyServer
		for i := 0; i < 3; i++ {
			s := memory.New(memory.WithSweepInterval(0))
			servers = append(servers, s)
		}
		c, err := New(servers, WithRetryCount(5), WithRetryDelay(2*time.Millisecond))
		require.NoError(t, err)
		var (
			wg    sync.WaitGroup
			mu    sync.Mutex
			wins  []*Lock
			start = make(chan struct{})
		)
		for i := 0; i < 4; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				l, err := c.Acquire(bg, "job", 10*time.Second)
				if err == nil {
					mu.Lock()
					wins = append(wins, l)
					mu.Unlock()
				} else {
					assert.ErrorIs(t, err, ErrNotAcquired)
				}
			}()
		}
		close(start)
		wg.Wait()
		require.Len(t, wins, 1, "round %d", round)
		require.NoError(t, wins[0].Release(bg))
		c.bg.Wait()
	}
}

func TestHeldLockRefusesRepeatedly(t *testing.T) {
	fc := clock.NewFake(t0)
	ks := memoryServers(t, fc, 3)
	c := testClient(t, fc, ks)
	l, err := c.TryAcquire(bg, "job", 10*time.Second)
	require.NoError(t, err)
	for i := 0; i < 5; i++ {
		_, err := c.TryAcquire(bg, "job", 10*time.Second)
		require.ErrorIs(t, err, ErrNotAcquired, "take %d", i)
		fc.Advance(time.Second)
	}
	require.NoError(t, l.Release(bg))
	l2, err := c.TryAcquire(bg, "job", 10*time.Second)
	require.NoError(t, err)
	require.NoError(t, l2.Release(bg))
}

func TestAbandonedLockIsFreeAfterItsTTL(t *testing.T) {
	c, fc := memoryClient(t)
	old, err := c.TryAcquire(bg, "job", time.Second)
	require.NoError(t, err)

	fc.Advance(50 * time.Millisecond)
	_, err = c.TryAcquire(bg, "job", time.Second)
	require.ErrorIs(t, err, ErrNotAcquired, "refused at +50ms")

	fc.Advance(950 * time.Millisecond) // the keys' TTL is over
	fresh, err := c.TryAcquire(bg, "job", time.Second)
	require.NoError(t, err, "free once its TTL ran out")

	require.ErrorIs(t, old.Release(bg), ErrNotHeld, "the old holder's late release")
	_, err = c.TryAcquire(bg, "job", time.Second)
	require.ErrorIs(t, err, ErrNotAcquired, "the new holder's keys survived the late release")
	require.NoError(t, fresh.Release(bg))
}

func TestKeyPrefix(t *testing.T) {
	fc := clock.NewFake(t0)
	servers := static.NewCluster(1)
	l, err := testClient(t, fc, servers.KeyServers(), WithKeyPrefix("app:")).TryAcquire(bg, "job", time.Second)
	require.NoError(t, err)
	assert.Equal(t, "job", l.Name())
	assert.Equal(t, "app:job", servers[0].Calls()[0].Key)
	assert.Equal(t, l.Token(), servers[0].Calls()[0].Token)
}

// TestKeyPrefixIsTheClients: a client has one key prefix (WithKeyPrefix
// is a ClientOption, not an Option a call could take), and every call and
// read of a name uses it: Campaign, Leader, Observe, Inspect and CheckFence
// agree under a prefixed client, and a client without the prefix finds
// nothing under the bare name.
func TestKeyPrefixIsTheClients(t *testing.T) {
	_, perCall := any(WithKeyPrefix("app:")).(Option)
	require.False(t, perCall, "WithKeyPrefix is no per-call Option")

	fc := clock.NewFake(t0)
	servers := memoryServers(t, fc, 3)
	app := testClient(t, fc, servers, WithKeyPrefix("app:"), WithFencing())
	plain := testClient(t, fc, servers, WithFencing())

	e := app.Election("primary")
	octx, stopObserving := context.WithCancel(bg)
	obs := observeAll(e.Observe(octx))
	require.Eventually(t, func() bool { return obs.last() == "" }, wait, time.Millisecond, "Observe's first value")
	ctx, resign := context.WithCancel(bg)
	lead, err := e.Campaign(ctx, 10*time.Second, "host-a")
	require.NoError(t, err)
	leader, err := e.Leader(bg)
	require.NoError(t, err)
	assert.Equal(t, "host-a", leader, "Leader finds its own election's campaign")
	require.Eventually(t, func() bool { return obs.last() == "host-a" }, wait, time.Millisecond, "Observe finds it")
	st, err := app.Inspect(bg, "primary")
	require.NoError(t, err)
	assert.Equal(t, "host-a", st.Election.Leader, "Inspect finds it")
	assert.Equal(t, lead.Fence(), st.Election.Term)
	_, err = plain.Election("primary").Leader(bg)
	require.ErrorIs(t, err, ErrNoLeader, "nothing under the bare name")
	st, err = plain.Inspect(bg, "app:primary")
	require.NoError(t, err)
	assert.Equal(t, "host-a", st.Election.Leader, "the keys are the prefixed name's")

	l, err := app.Acquire(bg, "job", 10*time.Second)
	require.NoError(t, err)
	current, err := app.CheckFence(bg, "job", l.Fence())
	require.NoError(t, err)
	assert.True(t, current, "CheckFence reads the fence its grant drew")
	st, err = app.Inspect(bg, "job")
	require.NoError(t, err)
	assert.True(t, st.Held)
	assert.Equal(t, l.Fence(), st.Fence)
	current, err = plain.CheckFence(bg, "job", l.Fence())
	require.NoError(t, err)
	assert.False(t, current, "no fence under the bare name")
	require.NoError(t, l.Release(bg))

	resign()
	require.Eventually(t, func() bool { return obs.last() == "" }, wait, time.Millisecond, "Observe sees the resignation")
	stopObserving()
	<-obs.closed
	<-lead.Done()
}

func TestFreshTokenPerAttempt(t *testing.T) {
	fc := clock.NewFake(t0)
	servers := static.Table([][]bool{{false, false}})
	c := testClient(t, fc, []keyserver.KeyServer{hidden{servers[0]}}, WithRetryCount(3), WithRetryJitter(0))
	res := async(t, func() error { _, err := c.Acquire(bg, "job", time.Second); return err })
	sleeps(t, fc, 3)
	require.Error(t, res())
	seen := map[string]bool{}
	for _, call := range servers[0].Calls() {
		if call.Op == static.OpAcquire {
			assert.False(t, seen[call.Token], "token reused")
			seen[call.Token] = true
		}
	}
	assert.Len(t, seen, 4)
}

// TestNewSkipsNilOptions: a nil ClientOption and a nil Option given to New
// are ignored, as nil Options given to a call are.
func TestNewSkipsNilOptions(t *testing.T) {
	c, err := New(static.NewCluster(1).KeyServers(), nil, Option(nil), WithRetryCount(0))
	require.NoError(t, err)
	assert.Equal(t, 0, c.retryCount)
	require.NoError(t, c.Close())
}

func TestInvalidArguments(t *testing.T) {
	one := static.NewCluster(1).KeyServers()
	news := []struct {
		name    string
		servers []keyserver.KeyServer
		opts    []ClientOption
		mention string
	}{
		{"no servers", nil, nil, "no key servers"},
		{"nil server", []keyserver.KeyServer{one[0], nil}, nil, "key server 1 is nil"},
		{"retry count", one, []ClientOption{WithRetryCount(-2)}, "-2"},
		{"retry delay", one, []ClientOption{WithRetryDelay(-time.Second)}, "-1s"},
		{"retry jitter", one, []ClientOption{WithRetryJitter(-1)}, "jitter"},
		{"jitter over delay", one, []ClientOption{WithRetryDelay(time.Millisecond), WithRetryJitter(time.Second)}, "exceeds"},
		{"drift factor", one, []ClientOption{WithDriftFactor(1)}, "drift factor 1"},
		{"drift NaN", one, []ClientOption{WithDriftFactor(math.NaN())}, "NaN"},
		{"negative drift", one, []ClientOption{WithDriftFactor(-0.1)}, "-0.1"},
		{"server timeout", one, []ClientOption{WithServerTimeout(-time.Second)}, "server timeout"},
		{"keep-alive interval", one, []ClientOption{WithKeepAliveInterval(-time.Second)}, "keep-alive"},
		{"max extensions", one, []ClientOption{WithMaxExtensions(-1)}, "max extensions"},
		{"max hold", one, []ClientOption{WithMaxHold(-1)}, "max hold"},
	}
	for _, tc := range news {
		_, err := New(tc.servers, tc.opts...)
		require.ErrorIs(t, err, ErrInvalidArgument, tc.name)
		assert.Contains(t, err.Error(), tc.mention, tc.name)
	}

	fc := clock.NewFake(t0)
	servers := static.NewCluster(3)
	c := testClient(t, fc, servers.KeyServers())
	calls := []struct {
		name    string
		err     error
		mention string
	}{
		{"empty name", func() error { _, err := c.Acquire(bg, "", time.Second); return err }(), "empty lock name"},
		{"zero ttl", func() error { _, err := c.Acquire(bg, "job", 0); return err }(), "ttl 0s"},
		{"ttl under drift", func() error { _, err := c.TryAcquire(bg, "job", 2*time.Millisecond); return err }(), "ttl 2ms"},
		{"nil fn in Do", c.Do(bg, "job", time.Second, nil), "nil function"},
		{"nil fn in DoOrSkip", func() error { _, err := c.DoOrSkip(bg, "job", time.Second, nil); return err }(), "nil function"},
	}
	for _, tc := range calls {
		require.ErrorIs(t, tc.err, ErrInvalidArgument, tc.name)
		assert.Contains(t, tc.err.Error(), tc.mention, tc.name)
	}
	l, err := c.TryAcquire(bg, "job", time.Second)
	require.NoError(t, err)
	require.ErrorIs(t, l.Extend(bg, time.Millisecond), ErrInvalidArgument)
	require.NoError(t, l.Release(bg))
	c.bg.Wait()
	assert.Equal(t, 0, servers.Count(static.OpExtend))
	assert.Equal(t, 3, servers.Count(static.OpAcquire), "invalid calls reach no server")
}

func TestLoggingNamesLockAndServerNeverToken(t *testing.T) {
	fc := clock.NewFake(t0)
	var buf strings.Builder
	var mu sync.Mutex
	logger := newTestLogger(&mu, &buf)
	servers := static.NewCluster(3)
	servers[2].Script(static.OpAcquire, static.Fail(errors.New("i/o timeout")))
	c := testClient(t, fc, servers.KeyServers(), WithLogger(logger))
	l, err := c.TryAcquire(bg, "report", time.Second)
	require.NoError(t, err)
	require.NoError(t, l.Release(bg))
	c.bg.Wait() // server 2's failure may come after the quorum
	mu.Lock()
	out := buf.String()
	mu.Unlock()
	assert.Contains(t, out, "lock=report")
	assert.Contains(t, out, "server=2")
	assert.Contains(t, out, "i/o timeout")
	assert.NotContains(t, out, l.Token())
}
