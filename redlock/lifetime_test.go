package redlock

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goredlock/goredlock/internal/check"
	"github.com/goredlock/goredlock/internal/clock"
	"github.com/goredlock/goredlock/internal/layout"
	"github.com/goredlock/goredlock/keyserver"
	"github.com/goredlock/goredlock/keyserver/static"
)

// gated returns a server whose calls of op wait until the returned gate is
// closed: a slow link whose commands still land, late.
func gated(op static.Op) (*static.Server, chan struct{}) {
	gate := make(chan struct{})
	s := static.New(static.WithBefore(func(_ context.Context, c static.Call) {
		if c.Op == op {
			<-gate
		}
	}))
	return s, gate
}

func ops(calls []static.Call) []static.Op {
	var out []static.Op
	for _, c := range calls {
		out = append(out, c.Op)
	}
	return out
}

func TestReleaseFollowsAStragglingAcquire(t *testing.T) {
	fc := clock.NewFake(t0)
	slow, gate := gated(static.OpAcquire)
	servers := static.Cluster{static.New(), static.New(), slow}
	c := testClient(t, fc, servers.KeyServers())
	l, err := c.TryAcquire(bg, "job", ttl3)
	require.NoError(t, err, "granted by the two fast servers")
	require.NoError(t, l.Release(bg), "confirmed by the two fast servers")
	assert.Equal(t, 0, slow.Count(static.OpRelease), "the delete waits for the Acquire it follows")

	close(gate) // the straggling Acquire lands now, after Release returned
	require.NoError(t, c.Close())
	calls := slow.Calls()
	require.Equal(t, []static.Op{static.OpAcquire, static.OpRelease}, ops(calls))
	assert.True(t, calls[0].OK, "the late Acquire stored the key")
	assert.True(t, calls[1].OK, "and the delete that followed it removed it")
}

func TestReleaseFollowsALateExtend(t *testing.T) {
	fc := clock.NewFake(t0)
	slow, gate := gated(static.OpExtend)
	servers := static.Cluster{static.New(), static.New(), slow}
	c := testClient(t, fc, servers.KeyServers())
	l, err := c.TryAcquire(bg, "job", ttl3)
	require.NoError(t, err)
	require.NoError(t, l.Extend(bg, ttl3), "extended on the two fast servers")
	require.NoError(t, l.Release(bg))
	close(gate)
	require.NoError(t, c.Close())
	calls := slow.Calls()
	require.Equal(t, []static.Op{static.OpAcquire, static.OpExtend, static.OpRelease}, ops(calls))
	assert.True(t, calls[2].OK, "the key the late Extend renewed was deleted after it")
}

func TestReleaseWithCancelledContextDeletes(t *testing.T) {
	fc := clock.NewFake(t0)
	servers := static.NewCluster(3)
	c := testClient(t, fc, servers.KeyServers())
	rival := testClient(t, fc, servers.KeyServers(), WithRetryCount(0))
	l, err := c.TryAcquire(bg, "job", ttl3)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(bg)
	cancel()
	require.NoError(t, l.Release(ctx), "a quorum deleted, whatever the context")
	require.NoError(t, c.Close())
	for i, s := range servers {
		calls := s.Calls()
		require.Equal(t, static.OpRelease, calls[len(calls)-1].Op, "server %d", i)
		assert.True(t, calls[len(calls)-1].OK, "server %d deleted the key", i)
	}
	l2, err := rival.TryAcquire(bg, "job", ttl3)
	require.NoError(t, err, "free at once")
	require.NoError(t, l2.Release(bg))
}

// TestHolderHearsFirst checks, at the moment each server receives Do's
// release, that fn's context has ended and its lock reports itself gone:
// nothing holding fn's context can see the lock held once another process
// could take it.
func TestHolderHearsFirst(t *testing.T) {
	boom := errors.New("boom")
	cases := map[string]func(ctx context.Context) error{
		"returns":      func(context.Context) error { return nil },
		"fails":        func(context.Context) error { return boom },
		"panics":       func(context.Context) error { panic(boom) },
		"outlives ctx": func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() },
	}
	for name, body := range cases {
		t.Run(name, func(t *testing.T) {
			fc := clock.NewFake(t0)
			var (
				fnCtx    atomic.Value
				releases atomic.Int32
				mu       sync.Mutex
				problems []string
			)
			check := static.WithBefore(func(_ context.Context, call static.Call) {
				if call.Op != static.OpRelease {
					return
				}
				releases.Add(1)
				ctx, _ := fnCtx.Load().(context.Context)
				l, ok := LockFromContext(ctx)
				mu.Lock()
				defer mu.Unlock()
				switch {
				case ctx == nil || !ok:
					problems = append(problems, "fn never ran with its lock")
				case ctx.Err() == nil:
					problems = append(problems, "fn's context still live at the release")
				case l.Err() == nil:
					problems = append(problems, "the lock still held at the release")
				case !closed(l.Done()):
					problems = append(problems, "Done still open at the release")
				}
			})
			servers := static.NewCluster(3, check)
			c := testClient(t, fc, servers.KeyServers())
			ctx, cancel := context.WithCancel(bg)
			defer cancel()
			fn := func(ctx context.Context) error {
				fnCtx.Store(ctx)
				if name == "outlives ctx" {
					cancel()
				}
				return body(ctx)
			}
			func() {
				defer func() {
					if r := recover(); r != nil && name != "panics" {
						panic(r)
					}
				}()
				_ = c.Do(ctx, "job", ttl3, fn)
			}()
			require.NoError(t, c.Close())
			assert.Equal(t, int32(3), releases.Load())
			assert.Empty(t, problems)
		})
	}
}

func TestLossDeclaredAMarginBeforeUntilWithHungServers(t *testing.T) {
	// Timeout 150ms, margin 400ms: Until +2.968s, the loss at +2.568s, so no
	// try may start after +2.418s. A failed try is tried again a timeout
	// after it failed: from +1s every 300ms while the hung servers make a
	// try wait for its timeout (+1s, 1.3, 1.6), then, their breakers open
	// (three failures over 600ms), every 150ms when their votes fail at
	// once, or 300ms when a try is their probe: +1.9 and at most 2.05, 2.2
	// and 2.35 before the next would be due at +2.5s, inside the margin.
	const timeout, margin = 150 * time.Millisecond, 400 * time.Millisecond
	fc := clock.NewFake(t0)
	servers := static.NewCluster(3)
	c := testClient(t, fc, servers.KeyServers(), WithServerTimeout(timeout), WithLossMargin(margin))
	until := t0.Add(ttl3 - drift(ttl3, DefaultDriftFactor))
	r := runUntilLostStepping(t, fc, c, func() {
		servers[0].Script(static.OpExtend, static.Hang)
		servers[1].Script(static.OpExtend, static.Hang)
	}, func(seen <-chan struct{}) {
		// The lock's expiry timer, and a keep-alive wait or an extension's
		// deadline; never past the time the loss is due, so that the
		// clock fn reads is that time if the loss came then.
		advanceTimersTo(t, fc, 2, seen, until.Add(-margin))
	})
	assert.Equal(t, until.Add(-margin), r.at, "fn told at +%v, Until is +%v", r.at.Sub(t0), until.Sub(t0))
	require.ErrorIs(t, r.cause, ErrLockLost)
	require.ErrorIs(t, r.err, ErrLockLost)
	require.NoError(t, c.Close())
	for i, s := range servers {
		// At most 7: no try whose answer could come after the loss. The
		// answering server hears at least 2: the tries go on past the
		// first failure (4 or more but for the stepping below; 3 in 2
		// runs of 300); a hung one at least its first, its breaker
		// failing the rest at once but for its probes. On a loaded
		// machine the stepping may move the clock before an extension's
		// call that waited for the one before it has armed its own
		// timeout, which delays the tries after it by one timeout: 2
		// tries in 1 to 3 runs of 1,000 beside two busy loops, where this
		// bound was 3.
		n := s.Count(static.OpExtend)
		assert.LessOrEqual(t, n, 7, "server %d: no try whose answer could come after the loss", i)
		least := 1
		if i == 2 {
			least = 2
		}
		assert.GreaterOrEqual(t, n, least, "server %d: tries until the margin", i)
	}
}

func TestDoOrSkipWithAnEvenNumberOfServers(t *testing.T) {
	for _, tc := range []struct {
		name     string
		refusing int
		skipped  bool
		attempts int
	}{
		{"half refuse: retried, then an error", 2, false, 3},
		{"a quorum refuses, one grants: skipped after one retry", 3, true, 2},
		{"all refuse: skipped at once", 4, true, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fc := clock.NewFake(t0)
			servers := static.NewCluster(4)
			for i := 0; i < tc.refusing; i++ {
				servers[i].Script(static.OpAcquire, static.Deny)
			}
			c := testClient(t, fc, servers.KeyServers(), WithRetryCount(2), WithRetryJitter(0))
			res := async(t, func() error {
				ran, err := c.DoOrSkip(bg, "job", ttl3, func(context.Context) error { return nil })
				assert.False(t, ran)
				return err
			})
			sleeps(t, fc, tc.attempts-1)
			err := res()
			if tc.skipped {
				require.NoError(t, err)
			} else {
				require.ErrorIs(t, err, ErrNotAcquired)
				require.NotErrorIs(t, err, ErrHeldElsewhere)
			}
			require.NoError(t, c.Close())
			assert.Equal(t, tc.attempts, servers[3].Count(static.OpAcquire))
		})
	}
}

func TestDoOrSkipWaitsForEnoughAnswersToKnow(t *testing.T) {
	fc := clock.NewFake(t0)
	servers := static.NewCluster(3)
	servers[0].Script(static.OpAcquire, static.Deny)
	servers[1].Script(static.OpAcquire, static.Fail(errors.New("connection refused")))
	servers[2].Script(static.OpAcquire, static.Reply{Delay: 10 * time.Millisecond}) // a late refusal
	c := testClient(t, fc, servers.KeyServers(), WithRetryCount(3))
	r := async(t, func() result {
		ran, err := c.DoOrSkip(bg, "job", ttl3, func(context.Context) error { return nil })
		return result{ran, err}
	})()
	require.NoError(t, r.err, "two refusals of three: held elsewhere")
	assert.False(t, r.ran)
	require.NoError(t, c.Close())
	assert.Equal(t, 1, servers[2].Count(static.OpAcquire))
}

func TestDoOrSkipRetriesASplitVoteAndRuns(t *testing.T) {
	fc := clock.NewFake(t0)
	servers := static.NewCluster(3)
	servers[0].Script(static.OpAcquire, static.Deny, static.FromStore)
	servers[1].Script(static.OpAcquire, static.Fail(errors.New("connection refused")), static.FromStore)
	c := testClient(t, fc, servers.KeyServers(), WithRetryCount(3))
	res := async(t, func() result {
		ran, err := c.DoOrSkip(bg, "job", ttl3, func(context.Context) error { return nil })
		return result{ran, err}
	})
	sleeps(t, fc, 1)
	r := res()
	require.NoError(t, r.err)
	assert.True(t, r.ran, "a split vote is no skip")
	require.NoError(t, c.Close())
	assert.Equal(t, 2, servers[2].Count(static.OpAcquire))
}

type result struct {
	ran bool
	err error
}

func TestDoOrSkipOutageIsAnError(t *testing.T) {
	fc := clock.NewFake(t0)
	down := errors.New("connection refused")
	servers := static.NewCluster(3, static.WithAcquire(static.Fail(down)))
	c := testClient(t, fc, servers.KeyServers(), WithRetryCount(2), WithRetryJitter(0))
	res := async(t, func() result {
		ran, err := c.DoOrSkip(bg, "job", ttl3, func(context.Context) error { return nil })
		return result{ran, err}
	})
	sleeps(t, fc, 2)
	r := res()
	assert.False(t, r.ran)
	require.ErrorIs(t, r.err, ErrNotAcquired)
	require.ErrorIs(t, r.err, down)
	require.NotErrorIs(t, r.err, ErrHeldElsewhere)
	var qe *QuorumError
	require.ErrorAs(t, r.err, &qe)
	assert.Equal(t, 3, qe.Attempts)
	assert.Len(t, qe.Failed, 2, "two failures of three rule out both a grant and a quorum of refusals")
}

// holdTTL is the TTL of the tests of a minute's minimum hold: a minimum
// hold never lengthens a lock, so the TTL must cover it.
const holdTTL = 2 * time.Minute

func TestMinHoldMakesALaterHostSkip(t *testing.T) {
	fc := clock.NewFake(t0)
	ks := memoryServers(t, fc, 3)
	hostA := testClient(t, fc, ks, WithMinHold(time.Minute))
	hostB := testClient(t, fc, ks, WithRetryCount(0))
	job := func(context.Context) error { return nil }

	ran, err := hostA.DoOrSkip(bg, "nightly", holdTTL, job)
	require.NoError(t, err)
	require.True(t, ran, "returned as soon as fn did, with no clock moved")

	fc.Advance(59 * time.Second)
	ran, err = hostB.DoOrSkip(bg, "nightly", holdTTL, job)
	require.NoError(t, err)
	assert.False(t, ran, "within the minimum hold the job is skipped")

	fc.Advance(2 * time.Second)
	ran, err = hostB.DoOrSkip(bg, "nightly", holdTTL, job)
	require.NoError(t, err)
	assert.True(t, ran, "after the minimum hold the job runs again")

	ran, err = hostB.DoOrSkip(bg, "nightly", holdTTL, job)
	require.NoError(t, err)
	assert.True(t, ran, "without a minimum hold the lock is deleted")
}

// TestReleaseRefusedByTooManyIsNotHeld: with four servers, two answering
// that another token holds the key and two not answering, no quorum of
// deletes is possible: the lock is not held, and the error says so in a
// release's words.
func TestReleaseRefusedByTooManyIsNotHeld(t *testing.T) {
	fc := clock.NewFake(t0)
	servers := static.NewCluster(4)
	c := testClient(t, fc, servers.KeyServers())
	l, err := c.Acquire(bg, "job", ttl3)
	require.NoError(t, err)
	servers[0].Script(static.OpRelease, static.Deny)
	servers[1].Script(static.OpRelease, static.Deny)
	servers[2].Script(static.OpRelease, static.Hang)
	servers[3].Script(static.OpRelease, static.Hang)
	err = l.Release(bg)
	require.ErrorIs(t, err, ErrNotHeld)
	var qe *QuorumError
	require.ErrorAs(t, err, &qe)
	assert.Equal(t, `redlock: release of lock "job" not confirmed: not held: 0 of 4 servers deleted it, 2 did not hold it, 0 failed, 2 not waited for`, err.Error())
	advanceTimersUntil(t, fc, 1, doneWaiting(c))
}

// TestReleaseAfterKeysLostSaysWhatServersAnswered: a release after three
// of five servers lost the lock's key (it expired there) says that they
// did not hold it, which is what they answered: a server's "not deleted"
// does not tell an absent key from another token's.
func TestReleaseAfterKeysLostSaysWhatServersAnswered(t *testing.T) {
	fc, lost := clock.NewFake(t0), clock.NewFake(t0)
	servers := memoryServers(t, fc, 2)
	servers = append(servers, memoryServers(t, lost, 3)...)
	c := testClient(t, fc, servers)
	l, err := c.Acquire(bg, "job", ttl3)
	require.NoError(t, err)
	c.bg.Wait()
	lost.Advance(time.Hour) // the key expires on the last three
	err = l.Release(bg)
	require.ErrorIs(t, err, ErrNotHeld)
	assert.Equal(t, `redlock: release of lock "job" not confirmed: not held: 2 of 5 servers deleted it, 3 did not hold it, 0 failed`, err.Error())
	assert.NotContains(t, err.Error(), "another token", "none holds another token")
}

// doneWaiting returns a channel closed once every call c left running has
// ended.
func doneWaiting(c *Client) <-chan struct{} {
	done := make(chan struct{})
	go func() { c.bg.Wait(); close(done) }()
	return done
}

// TestMinHoldAppliesToRelease: an Acquire'd lock given WithMinHold, by its
// call or its client, keeps its keys until the hold has passed, as Do's
// does; without it, Release deletes.
func TestMinHoldAppliesToRelease(t *testing.T) {
	fc := clock.NewFake(t0)
	ks := memoryServers(t, fc, 3)
	holder := testClient(t, fc, ks)
	other := testClient(t, fc, ks, WithRetryCount(0))
	for _, take := range []func() (*Lock, error){
		func() (*Lock, error) { return holder.Acquire(bg, "nightly", holdTTL, WithMinHold(time.Minute)) },
		func() (*Lock, error) { return holder.TryAcquire(bg, "nightly", holdTTL, WithMinHold(time.Minute)) },
	} {
		l, err := take()
		require.NoError(t, err)
		require.NoError(t, l.Release(bg))
		require.ErrorIs(t, l.Err(), ErrNotHeld, "released for its holder")
		fc.Advance(59 * time.Second)
		_, err = other.TryAcquire(bg, "nightly", holdTTL)
		require.ErrorIs(t, err, ErrHeldElsewhere, "within the minimum hold")
		fc.Advance(2 * time.Second)
		l, err = other.TryAcquire(bg, "nightly", holdTTL)
		require.NoError(t, err, "after the minimum hold")
		require.NoError(t, l.Release(bg))
	}
	_, err := other.TryAcquire(bg, "nightly", holdTTL)
	require.NoError(t, err, "without a minimum hold Release deletes")
}

// TestMinHoldNeverLengthensTheLock: Release cuts the keys' TTL to the
// rest of the minimum hold or the rest of the lock's own TTL, whichever
// is shorter: a 1 s lock given WithMinHold(5s) and released at once is
// free to others after 1 s, not 5 s, and Release's calls carry no TTL
// longer than the lock had left. A lock that was extended keeps to its
// last extension's TTL.
func TestMinHoldNeverLengthensTheLock(t *testing.T) {
	fc := clock.NewFake(t0)
	ks := memoryServers(t, fc, 3)
	logged := static.New(static.WithNow(fc.Now))
	holder := testClient(t, fc, ks, WithMinHold(5*time.Second))
	other := testClient(t, fc, ks, WithRetryCount(0))
	l, err := holder.Acquire(bg, "job", time.Second)
	require.NoError(t, err)
	fc.Advance(200 * time.Millisecond)
	require.NoError(t, l.Release(bg))
	fc.Advance(799 * time.Millisecond)
	_, err = other.TryAcquire(bg, "job", time.Second)
	require.ErrorIs(t, err, ErrHeldElsewhere, "within the lock's own TTL")
	fc.Advance(2 * time.Millisecond)
	l, err = other.TryAcquire(bg, "job", time.Second)
	require.NoError(t, err, "once the lock's TTL has passed, whatever the minimum hold")
	require.NoError(t, l.Release(bg))

	// Extended to 2 s at 0.5 s: the cut is to the extension's end, 2.5 s
	// after the grant, short of the 5 s minimum hold.
	c := testClient(t, fc, []keyserver.KeyServer{logged}, WithMinHold(5*time.Second))
	l, err = c.Acquire(bg, "job", time.Second)
	require.NoError(t, err)
	fc.Advance(500 * time.Millisecond)
	require.NoError(t, l.Extend(bg, 2*time.Second))
	fc.Advance(time.Second)
	require.NoError(t, l.Release(bg))
	calls := logged.Calls()
	last := calls[len(calls)-1]
	require.Equal(t, static.OpExtend, last.Op, "the minimum hold is kept by a cut, not a delete")
	assert.Equal(t, time.Second, last.TTL, "the rest of the extension's TTL, not of the minimum hold")

	// A minimum hold shorter than the TTL still cuts to its own rest.
	l, err = c.Acquire(bg, "short", 10*time.Second, WithMinHold(3*time.Second))
	require.NoError(t, err)
	fc.Advance(time.Second)
	require.NoError(t, l.Release(bg))
	calls = logged.Calls()
	last = calls[len(calls)-1]
	require.Equal(t, static.OpExtend, last.Op)
	assert.Equal(t, 2*time.Second, last.TTL, "the rest of the minimum hold")
}

func TestClosedClientRefusesWithoutReachingServers(t *testing.T) {
	fc := clock.NewFake(t0)
	servers := static.NewCluster(3)
	c, err := New(servers.KeyServers(), withClock(fc))
	require.NoError(t, err)
	l, err := c.TryAcquire(bg, "held", ttl3)
	require.NoError(t, err)
	require.NoError(t, c.Close())
	require.NoError(t, c.Close(), "a second Close")
	before := len(servers[0].Calls())

	fn := func(context.Context) error { t.Error("fn ran on a closed client"); return nil }
	_, err = c.Acquire(bg, "job", ttl3)
	assert.ErrorIs(t, err, ErrClosed, "Acquire")
	_, err = c.TryAcquire(bg, "job", ttl3)
	assert.ErrorIs(t, err, ErrClosed, "TryAcquire")
	assert.ErrorIs(t, c.Do(bg, "job", ttl3, fn), ErrClosed, "Do")
	_, err = c.DoOrSkip(bg, "job", ttl3, fn)
	assert.ErrorIs(t, err, ErrClosed, "DoOrSkip")
	assert.ErrorIs(t, l.Extend(bg, ttl3), ErrClosed, "Extend")
	assert.ErrorIs(t, l.Release(bg), ErrClosed, "Release")
	assert.ErrorIs(t, l.Err(), ErrNotHeld, "Release still ends the lock here")
	assert.Len(t, servers[0].Calls(), before, "no server reached after Close")
}

func TestCloseWaitsForStragglers(t *testing.T) {
	fc := clock.NewFake(t0)
	servers := static.NewCluster(3)
	servers[2].Script(static.OpAcquire, static.Hang)
	c, err := New(servers.KeyServers(), withClock(fc))
	require.NoError(t, err)
	l, err := c.TryAcquire(bg, "job", ttl3)
	require.NoError(t, err)
	require.NoError(t, l.Release(bg))

	closing := make(chan struct{})
	go func() {
		defer close(closing)
		assert.NoError(t, c.Close())
	}()
	time.Sleep(20 * time.Millisecond) // Close, if it did not wait, would have returned
	assert.False(t, closed(closing), "Close returned while server 2's Acquire hung")
	fc.Advance(ttl3 / 20) // the hung call times out; the delete then follows it
	select {
	case <-closing:
	case <-time.After(wait):
		t.Fatal("Close did not return once the hung call ended")
	}
	assert.Equal(t, []static.Op{static.OpAcquire, static.OpRelease}, ops(servers[2].Calls()))
}

func TestFailedAttemptIsBoundedByOneServerTimeout(t *testing.T) {
	fc := clock.NewFake(t0)
	servers := static.NewCluster(3)
	for _, s := range servers[1:] {
		s.Script(static.OpAcquire, static.Hang)
		s.Script(static.OpRelease, static.Hang) // their clean-up hangs too
	}
	c := testClient(t, fc, servers.KeyServers())
	const ttl = 10 * time.Second
	timeout := ttl / 20
	res := async(t, func() error { _, err := c.TryAcquire(bg, "job", ttl); return err })
	waitPending(t, fc, 1) // the attempt's deadline
	fc.Advance(timeout)
	err := res() // no further clock movement needed
	require.ErrorIs(t, err, ErrNotAcquired)
	var qe *QuorumError
	require.ErrorAs(t, err, &qe)
	require.NotEmpty(t, qe.Failed)
	for _, se := range qe.Failed {
		require.ErrorIs(t, se, context.DeadlineExceeded, "server %d timed out", se.Server)
	}
	assert.Equal(t, t0.Add(timeout), fc.Now())
	// Undone before returning when its grant was counted before the
	// verdict; on a loaded machine the grant's goroutine may bring it
	// after, and the undo follows in the background.
	assert.Eventually(t, func() bool { return servers[0].Count(static.OpRelease) == 1 }, wait, time.Millisecond,
		"the server that granted was cleaned up")
	waitPending(t, fc, 2) // the hung clean-ups' deadlines
	fc.Advance(timeout)   // they time out in the background
}

// waitPending waits, in real time, until fc has at least n timers.
func waitPending(t *testing.T, fc *clock.Fake, n int) {
	t.Helper()
	deadline := time.Now().Add(wait)
	for fc.Pending() < n {
		if time.Now().After(deadline) {
			t.Fatalf("%d timers pending, want %d", fc.Pending(), n)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestPermanentFailuresEndTheRetries(t *testing.T) {
	fc := clock.NewFake(t0)
	wrong := check.Permanent(errors.New("WRONGTYPE Operation against a key holding the wrong kind of value"))
	servers := static.NewCluster(3, static.WithAcquire(static.Fail(wrong)))
	servers[0].Script(static.OpAcquire, static.FromStore)
	c := testClient(t, fc, servers.KeyServers(), WithRetryCount(5))
	_, err := c.Acquire(bg, "job", ttl3)
	require.ErrorIs(t, err, ErrNotAcquired)
	require.ErrorIs(t, err, keyserver.ErrPermanent)
	assert.Equal(t, 1, servers[0].Count(static.OpAcquire), "no retry can heal two wrong-type keys")
}

func TestHeldElsewhereSurvivesTheContextEnding(t *testing.T) {
	fc := clock.NewFake(t0)
	servers := static.Table([][]bool{{false, false}, {false, false}, {true, true}})
	c := testClient(t, fc, servers.KeyServers(), WithRetryCount(-1))
	ctx, cancel := context.WithCancel(bg)
	res := async(t, func() error { _, err := c.Acquire(ctx, "job", ttl3); return err })
	_, err := fc.BlockUntilSleepers(1, wait)
	require.NoError(t, err)
	cancel()
	err = res()
	require.ErrorIs(t, err, ErrHeldElsewhere)
	require.ErrorIs(t, err, ErrNotAcquired)
	require.ErrorIs(t, err, context.Canceled)
	var qe *QuorumError
	require.ErrorAs(t, err, &qe)
	assert.Equal(t, QuorumError{Op: "acquire", Name: "job", Attempts: 1, Servers: 3, Refused: 2},
		QuorumError{Op: qe.Op, Name: qe.Name, Attempts: qe.Attempts, Servers: qe.Servers, Refused: qe.Refused})
	assert.LessOrEqual(t, qe.Granted, 1, "the grant may have come before the refusals decided")
}

func TestPerCallOptions(t *testing.T) {
	fc := clock.NewFake(t0)
	servers := static.Table([][]bool{{false, false}, {false, false}, {false, false}})
	c := testClient(t, fc, servers.KeyServers(), WithRetryCount(0))

	res := async(t, func() error { _, err := c.Acquire(bg, "job", ttl3, WithRetryCount(2)); return err })
	// Waiting in line for a turn that never comes, the call gives up when
	// its patience is spent: its retries × the retry delay.
	assert.Equal(t, []time.Duration{400 * time.Millisecond}, sleeps(t, fc, 1), "the call's retry count")
	require.ErrorIs(t, res(), ErrNotAcquired)
	c.bg.Wait()
	assert.Equal(t, 2, servers[0].Count(static.OpAcquire))

	_, err := c.Acquire(bg, "job", ttl3)
	require.ErrorIs(t, err, ErrNotAcquired)
	c.bg.Wait() // the call to a server the verdict did not wait for
	assert.Equal(t, 3, servers[0].Count(static.OpAcquire), "the client's retry count again")

	// A client-only option (WithLogger, WithHooks, WithFencing) given to a
	// call does not compile: it is a ClientOption, not an Option.
	bad := []Option{WithRetryDelay(-1), WithMinHold(-time.Second), WithLossMargin(-1)}
	for _, opt := range bad {
		_, err := c.Acquire(bg, "job", ttl3, opt)
		require.ErrorIs(t, err, ErrInvalidArgument)
		assert.Contains(t, err.Error(), "redlock: ")
		require.ErrorIs(t, c.Do(bg, "job", ttl3, func(context.Context) error { return nil }, opt), ErrInvalidArgument)
	}
	_, err = c.TryAcquire(bg, "job", ttl3, WithLossMargin(ttl3))
	require.ErrorIs(t, err, ErrInvalidArgument, "a margin that leaves no validity")
	assert.Equal(t, 3, servers[0].Count(static.OpAcquire), "bad options reach no server")
}

func TestNewRefusesTypedNilAndWarnsOfEvenCounts(t *testing.T) {
	var typedNil *static.Server
	_, err := New([]keyserver.KeyServer{static.New(), typedNil})
	require.ErrorIs(t, err, ErrInvalidArgument)
	assert.Contains(t, err.Error(), "redlock: invalid argument: key server 1 is nil")

	for n, warns := range map[int]bool{2: true, 3: false, 4: true, 5: false} {
		var (
			mu  sync.Mutex
			buf strings.Builder
		)
		c, err := New(static.NewCluster(n).KeyServers(), WithLogger(newTestLogger(&mu, &buf)))
		require.NoError(t, err)
		require.NoError(t, c.Close())
		assert.Equal(t, warns, strings.Contains(buf.String(), "level=WARN"), "%d servers: %s", n, buf.String())
	}
}

func TestErrorTexts(t *testing.T) {
	fc := clock.NewFake(t0)
	c := testClient(t, fc, static.NewCluster(3).KeyServers())
	ctx, cancel := context.WithCancel(bg)
	cancel()
	_, err := c.Acquire(ctx, "job", ttl3)
	assert.EqualError(t, err, `redlock: lock "job" not acquired: the context ended before the first attempt; context canceled`)

	_, err = c.Acquire(bg, "job", -time.Second)
	assert.EqualError(t, err, `redlock: invalid argument: ttl -1s of lock "job" is under the minimum of 1ms`)

	l, err := c.TryAcquire(bg, "job", ttl3)
	require.NoError(t, err)
	fc.Advance(ttl3)
	err = l.Extend(bg, ttl3)
	require.ErrorIs(t, err, ErrNotHeld)
	assert.NotContains(t, err.Error(), "m=", "no monotonic clock reading")
	assert.Contains(t, err.Error(), `redlock: lock "job" not held: it was lost`)
}

func TestTokensCarryTheCallsRank(t *testing.T) {
	seen := map[string]bool{}
	began := time.UnixMilli(1_763_000_000_123)
	r := newRank(began)
	for i := 0; i < 10000; i++ {
		tok := newToken(r)
		require.Regexp(t, `^[0-9a-f]{16}\.[0-9a-f]{32}$`, tok)
		require.True(t, strings.HasPrefix(tok, fmt.Sprintf("%016x.", began.UnixMilli())), tok)
		require.Equal(t, string(r[:]), layout.RankOf(tok), "every attempt of a call carries its rank")
		require.False(t, seen[tok], "token %q drawn twice", tok)
		seen[tok] = true
	}
	other := newRank(began)
	require.NotEqual(t, r, other, "two calls in one millisecond still differ")
	laterRank := newRank(began.Add(time.Millisecond))
	later := newToken(laterRank)
	for tok := range seen {
		require.Equal(t, 1, keyserver.Compare(later, tok), "a later call ranks behind")
		break
	}
}

// TestZeroLockDoesNotPanic: a zero Lock, one not made by a Client (a
// struct field never assigned, a copy of redlock.Lock{}), holds nothing,
// as a nil *Lock: no method panics, Done is closed, and the methods that
// report an error report one matching ErrInvalidArgument and ErrNotHeld.
func TestZeroLockDoesNotPanic(t *testing.T) {
	for what, l := range map[string]*Lock{"nil": nil, "zero": {}, "new": new(Lock)} {
		t.Run(what, func(t *testing.T) {
			assert.Empty(t, l.Name())
			assert.Empty(t, l.Token())
			assert.Zero(t, l.Until())
			assert.Zero(t, l.Fence())
			assert.True(t, closed(l.Done()), "Done")
			for method, err := range map[string]error{
				"Err": l.Err(), "Extend": l.Extend(bg, time.Second), "Release": l.Release(bg), "KeepAlive": l.KeepAlive(bg),
				"Release again": l.Release(bg),
			} {
				assert.ErrorIs(t, err, ErrInvalidArgument, method)
				assert.ErrorIs(t, err, ErrNotHeld, method)
			}
			ctx, cancel := context.WithCancel(bg)
			cancel()
			assert.ErrorIs(t, l.KeepAlive(ctx), ErrNotHeld, "KeepAlive with an ended ctx")
		})
	}
}

func TestNewRefusesOneServerTwice(t *testing.T) {
	s := static.New()
	_, err := New([]keyserver.KeyServer{s, static.New(), s})
	require.ErrorIs(t, err, ErrInvalidArgument)
	assert.Contains(t, err.Error(), "key servers 0 and 2 are the same server")
}

func TestLongNamesAreRefusedWithoutQuotingThem(t *testing.T) {
	fc := clock.NewFake(t0)
	servers := static.NewCluster(3)
	c := testClient(t, fc, servers.KeyServers())
	long := strings.Repeat("x", MaxNameLen+1)
	_, err := c.Acquire(bg, long, ttl3)
	require.ErrorIs(t, err, ErrInvalidArgument)
	assert.NotContains(t, err.Error(), long[:100])
	assert.Contains(t, err.Error(), "1025 bytes")
	assert.ErrorIs(t, c.Do(bg, long, ttl3, func(context.Context) error { return nil }), ErrInvalidArgument)
	assert.Zero(t, servers.Count(static.OpAcquire), "no server was asked")
	_, err = c.TryAcquire(bg, strings.Repeat("y", MaxNameLen), ttl3)
	require.NoError(t, err, "a name of MaxNameLen bytes")
}

// identified is a key server that says which store it reaches: its
// incarnation's ID (durable, so that no quarantine is in the way).
type identified struct {
	keyserver.KeyServer
	id string
}

func (s identified) Incarnation(context.Context) (keyserver.Incarnation, error) {
	return keyserver.Incarnation{ID: s.id, Up: time.Hour, Durable: true}, nil
}

func TestOneStoreReachedTwiceIsRefused(t *testing.T) {
	fc := clock.NewFake(t0)
	servers := static.NewCluster(3)
	ks := []keyserver.KeyServer{identified{servers[0], "a"}, identified{servers[1], "b"}, identified{servers[2], "a"}}
	c := testClient(t, fc, ks)
	// Servers are asked who they are with their first votes, which no
	// server's silence may hold up: the calls decided before the second of
	// servers 0 and 2 answered may be granted by the first and server 1,
	// one vote each. From the call that finds the store reached twice on,
	// every call fails.
	var err error
	for range 100 {
		var l *Lock
		if l, err = c.TryAcquire(bg, "job", ttl3); err != nil {
			break
		}
		require.NoError(t, l.Release(bg))
	}
	require.ErrorIs(t, err, ErrInvalidArgument)
	assert.Contains(t, err.Error(), "key servers 0 and 2 reach the same store")
	assert.Zero(t, min(servers[0].Count(static.OpAcquire), servers[2].Count(static.OpAcquire)),
		"the second of the two to answer was never asked to vote")
	_, err = c.TryAcquire(bg, "job", ttl3)
	require.ErrorIs(t, err, ErrInvalidArgument, "and every later call")
	c.bg.Wait()

	// The distinct client is granted "job": the refused call left nothing held.
	distinct := testClient(t, fc, []keyserver.KeyServer{identified{servers[0], "a"}, identified{servers[1], "b"}, identified{servers[2], "c"}})
	l, err := distinct.Acquire(bg, "job", ttl3)
	require.NoError(t, err)
	require.NoError(t, l.Release(bg))
}
