package redlock

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goredlock/goredlock/internal/clock"
	"github.com/goredlock/goredlock/internal/layout"
	"github.com/goredlock/goredlock/keyserver"
	"github.com/goredlock/goredlock/keyserver/static"
)

// TestLineServesCallsInOrderAcrossClients: calls waiting for a lock, in
// four clients that share the servers, get it in the order they began,
// each as soon as the one before releases it, not by the retry delay (a
// minute) or the poll; the first waiter of each client asks the servers
// twice (refused, then granted at its turn), the others once, and every
// watch is stopped at the end. Hand-over is off: this is the order it
// keeps (see also TestHandOverBoundedByBudget/off).
func TestLineServesCallsInOrderAcrossClients(t *testing.T) {
	fc := clock.NewFake(t0)
	servers := static.NewCluster(3)
	clients := make([]*Client, 4)
	for i := range clients {
		clients[i] = testClient(t, fc, servers.KeyServers(), WithRetryDelay(time.Minute), WithHandOver(NoHandOver))
	}
	first, err := clients[0].Acquire(bg, "job", time.Minute)
	require.NoError(t, err)

	const n = 8
	grants := startWaiters(t, fc, n, func(i int) *Client { return clients[(i*3)%len(clients)] })
	// The first waiter of each client is refused, and waits in the servers'
	// lines; the calls behind it in its client wait behind it, and join
	// the servers' lines with its attempts.
	const firsts = 4
	for _, c := range clients {
		c.bg.Wait() // the calls not waited for
	}
	assert.Equal(t, 3*(1+firsts), servers.Count(static.OpAcquire), "acquire calls before the release")
	require.NoError(t, first.Release(bg))
	assert.Equal(t, []int{0, 1, 2, 3, 4, 5, 6, 7}, grants(), "the order of the grants")
	for _, c := range clients {
		c.bg.Wait() // the calls not waited for
	}
	assert.Equal(t, 3*(1+firsts+n), servers.Count(static.OpAcquire), "acquire calls: a refused one per client, a granted one per waiter")
	assert.Equal(t, t0.Add(n*time.Millisecond), fc.Now(), "served without the clock moving")
	for i, s := range servers {
		assert.Zero(t, s.Watching("job"), "server %d: a watch outlived its call", i)
	}
}

// TestOneClientsCallsLineUp: the calls of one client that wait for a
// lock it holds line up behind the first: only that one is refused by the
// servers, the others join the servers' lines with its attempts. So a
// grant costs a claim and a release, not a refused attempt more. (With
// hand-over, on by default, the lock passes from call to call instead:
// TestHandOverPassesInOrderWithoutServers.)
func TestOneClientsCallsLineUp(t *testing.T) {
	fc := clock.NewFake(t0)
	servers := static.NewCluster(3)
	c := testClient(t, fc, servers.KeyServers(), WithRetryDelay(time.Minute), WithHandOver(NoHandOver))
	first, err := c.Acquire(bg, "job", time.Minute)
	require.NoError(t, err)
	const n = 8
	grants := startWaiters(t, fc, n, func(int) *Client { return c })
	c.bg.Wait() // the calls not waited for
	assert.Equal(t, 3*2, servers.Count(static.OpAcquire), "acquire calls before the release: the first lock's, one refusal")
	require.NoError(t, first.Release(bg))
	assert.Equal(t, []int{0, 1, 2, 3, 4, 5, 6, 7}, grants(), "the order of the grants")
	c.bg.Wait() // the calls not waited for
	assert.Equal(t, 3*(2+n), servers.Count(static.OpAcquire), "acquire calls: one granted per waiter, no other refusal")
	assert.Equal(t, t0.Add(n*time.Millisecond), fc.Now(), "served without the clock moving")
	for i, s := range servers {
		assert.Zero(t, s.Watching("job"), "server %d: a watch outlived its call", i)
	}
}

// startWaiters starts n calls of Acquire of "job", call i on client(i),
// each 1 ms of fc after the one before (so that it ranks after it) and
// once the one before waits; each releases the lock as soon as it is
// granted. grants waits for them all and returns the order they were
// granted in.
func startWaiters(t *testing.T, fc *clock.Fake, n int, client func(i int) *Client) (grants func() []int) {
	t.Helper()
	var (
		mu    sync.Mutex
		order []int
		wg    sync.WaitGroup
	)
	for i := 0; i < n; i++ {
		fc.Advance(time.Millisecond)
		wg.Add(1)
		go func() {
			defer wg.Done()
			l, err := client(i).Acquire(bg, "job", time.Minute)
			if !assert.NoError(t, err) {
				return
			}
			mu.Lock()
			order = append(order, i)
			mu.Unlock()
			assert.NoError(t, l.Release(bg))
		}()
		_, err := fc.BlockUntilSleepers(i+1, wait) // refused, and waiting
		require.NoError(t, err)
	}
	return func() []int {
		wg.Wait()
		mu.Lock()
		defer mu.Unlock()
		return order
	}
}

// TestNoLostWakeUp: a release that lands between a waiter's refusal and
// its watch is heard: the watch looks again once it is in place.
func TestNoLostWakeUp(t *testing.T) {
	fc := clock.NewFake(t0)
	var holder *Lock
	var once sync.Once
	servers := static.NewCluster(3, static.WithBefore(func(_ context.Context, c static.Call) {
		if c.Op == static.OpWatch {
			once.Do(func() { assert.NoError(t, holder.Release(bg)) }) // before the first watch is armed
		}
	}))
	rival := testClient(t, fc, servers.KeyServers())
	waiter := testClient(t, fc, servers.KeyServers(), WithRetryDelay(time.Minute))
	var err error
	holder, err = rival.Acquire(bg, "job", time.Minute)
	require.NoError(t, err)
	l, err := waiter.Acquire(bg, "job", time.Minute)
	require.NoError(t, err)
	assert.Equal(t, t0, fc.Now(), "granted without the clock moving")
	rival.bg.Wait() // the calls not waited for
	waiter.bg.Wait()
	assert.Equal(t, 2, servers[0].Count(static.OpAcquire)-1, "the waiter's attempts: refused, then granted")
	require.NoError(t, l.Release(bg))
}

// TestPatienceIsTime: a refused call gives up once it has waited its
// retries × the retry delay, whether it waits in line (a turn that never
// comes) or polls servers that keep no line, and not before.
func TestPatienceIsTime(t *testing.T) {
	for _, tc := range []struct {
		name     string
		servers  func(static.Cluster) []keyserver.KeyServer
		attempts int
		patience time.Duration
	}{
		{"in line", static.Cluster.KeyServers, 2, 300 * time.Millisecond},
		{"polling", func(c static.Cluster) []keyserver.KeyServer {
			return []keyserver.KeyServer{hidden{c[0]}, hidden{c[1]}, hidden{c[2]}}
		}, 4, 300 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fc := clock.NewFake(t0)
			servers := static.NewCluster(3, static.WithAcquire(static.Deny))
			c := testClient(t, fc, tc.servers(servers), WithRetryCount(3),
				WithRetryDelay(100*time.Millisecond), WithRetryJitter(0))
			done := make(chan error, 1)
			go func() { _, err := c.Acquire(bg, "job", ttl3); done <- err }()
			var err error
			advanceUntilSent(t, fc, done, &err)
			require.ErrorIs(t, err, ErrHeldElsewhere)
			var qe *QuorumError
			require.ErrorAs(t, err, &qe)
			assert.Equal(t, tc.attempts, qe.Attempts)
			assert.Equal(t, t0.Add(tc.patience), fc.Now(), "gave up after 3 × 100 ms")
		})
	}
}

// advanceUntilSent advances fc past every wait until done yields, and
// stores what it yielded in err.
func advanceUntilSent(t *testing.T, fc *clock.Fake, done <-chan error, err *error) {
	t.Helper()
	deadline := time.Now().Add(wait)
	for {
		select {
		case *err = <-done:
			return
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("not done after %v of advancing the clock (at %v)", wait, fc.Now().Sub(t0))
		}
		if ds, e := fc.BlockUntilSleepers(1, 20*time.Millisecond); e == nil {
			fc.Advance(ds[0])
		}
	}
}

// TestPatienceLastsWhileTheLineMoves: a waiter whose patience is far
// shorter than the wait for the callers ahead of it does not give up while
// the lock passes along the line towards it.
func TestPatienceLastsWhileTheLineMoves(t *testing.T) {
	fc := clock.NewFake(t0)
	servers := static.NewCluster(3, static.WithNow(fc.Now)) // no promise lapses while the fake clock stands
	holder := testClient(t, fc, servers.KeyServers())
	l, err := holder.Acquire(bg, "job", ttl3)
	require.NoError(t, err)
	// Each call in line on every server before the next comes: a refusal
	// that lands after the next call's counts one waiter fewer ahead of
	// it, and the impatient call's patience 20 ms less (seen in about one
	// run in 3,000 under load, then given up at a release).
	heldWithWaiters(t, holder, "job", 0)
	const n = 4
	locks := make(chan lockResult, n)
	for i := 0; i < n; i++ {
		fc.Advance(time.Millisecond)
		ahead := testClient(t, fc, servers.KeyServers(), WithRetryCount(-1)) // as separate processes
		go func() { l, err := ahead.Acquire(bg, "job", ttl3); locks <- lockResult{l, err} }()
		_, err := fc.BlockUntilSleepers(i+1, wait)
		require.NoError(t, err)
		heldWithWaiters(t, holder, "job", i+1)
	}
	fc.Advance(time.Millisecond)
	impatient := testClient(t, fc, servers.KeyServers(), WithRetryCount(2), WithRetryDelay(10*time.Millisecond))
	done := make(chan lockResult, 1)
	go func() { l, err := impatient.Acquire(bg, "job", ttl3); done <- lockResult{l, err} }()
	_, err = fc.BlockUntilSleepers(n+1, wait)
	require.NoError(t, err)
	heldWithWaiters(t, holder, "job", n+1)
	// The impatient call is given 20 ms for each of the 4 waiters ahead
	// and for its own turn: 100 ms. The first holds take longer, 120 ms
	// in all, while it is far back in line; it must take heart from the
	// line moving, and then the last holds are short.
	// A waiter not granted fails in seconds, not at the package's timeout.
	// It hung about once in 1,600 runs under load until a waiter's
	// give-back kept its place (keyserver.Notifier's ReleaseInLine): the
	// impatient call had overtaken waiter 4.
	for i, hold := range []time.Duration{40, 40, 40, 5, 5} {
		fc.Advance(hold * time.Millisecond)
		require.NoError(t, l.Release(bg))
		if i < n {
			select {
			case r := <-locks:
				require.NoError(t, r.err, "waiter %d", i+1)
				l = r.lock
			case <-time.After(10 * time.Second):
				st, err := holder.Inspect(bg, "job")
				t.Fatalf("waiter %d not granted 10 s after the release (fake time %v); servers: %+v, %v", i+1, fc.Now().Sub(t0), st.Servers, err)
			}
		}
	}
	var r lockResult
	select {
	case r = <-done:
	case <-time.After(10 * time.Second):
		st, err := holder.Inspect(bg, "job")
		t.Fatalf("the impatient call not returned 10 s after the last release (fake time %v); servers: %+v, %v", fc.Now().Sub(t0), st.Servers, err)
	}
	require.NoError(t, r.err, "gave up while the line moved, %v after it began", fc.Now().Sub(t0))
	require.NoError(t, r.lock.Release(bg))
}

// TestPatienceEndsWhileTheHolderExtends: a holder that extends its lock
// keeps it where it is, and the waiter in line gives up at the end of its
// patience: an extension sets the key anew, but the line says no holder
// came from ahead of the waiter. Counted as a move, each extension would
// renew the waiter's patience, and a holder that extends more often than
// that (KeepAlive's TTL/3 below the default 2 s) would hold its waiters
// until it let go.
func TestPatienceEndsWhileTheHolderExtends(t *testing.T) {
	fc := clock.NewFake(t0)
	ks := memoryServers(t, fc, 3)
	holder := testClient(t, fc, ks)
	waiter := testClient(t, fc, ks, WithRetryCount(5), WithRetryDelay(100*time.Millisecond), WithRetryJitter(0))
	l, err := holder.Acquire(bg, "job", ttl3)
	require.NoError(t, err)
	res := make(chan result, 1)
	go func() { _, err := waiter.Acquire(bg, "job", ttl3); res <- result{err: err} }()
	for step := 0; ; step++ {
		if r, ok := sleepsOrReturns(t, fc, res); ok {
			require.ErrorIs(t, r.err, ErrHeldElsewhere)
			assert.Equal(t, 500*time.Millisecond, fc.Now().Sub(t0), "gave up at the end of its patience, 5 × 100 ms")
			require.NoError(t, l.Release(bg))
			return
		}
		require.Less(t, step, 600, "the waiter still waits after %v of extensions every 200 ms", fc.Now().Sub(t0))
		fc.Advance(100 * time.Millisecond)
		if step%2 == 1 {
			require.NoError(t, l.Extend(bg, ttl3))
		}
	}
}

// TestAGiveBackKeepsThePlace: a waiter granted on one server, refused by
// the holder on the others, gives the grant back and keeps its place
// there (keyserver.Notifier's ReleaseInLine): when the holder lets go of
// a second server, the earlier waiter holds two promises and is granted,
// not the later waiter behind it, to which a plain Release had passed the
// first.
func TestAGiveBackKeepsThePlace(t *testing.T) {
	fc := clock.NewFake(t0)
	servers := static.NewCluster(3, static.WithNow(fc.Now))
	holder := testClient(t, fc, servers.KeyServers())
	h, err := holder.Acquire(bg, "job", ttl3)
	require.NoError(t, err)
	heldWithWaiters(t, holder, "job", 0)
	results := make(chan lockResult, 2)
	for i := range 2 { // the earlier waiter, then the later
		fc.Advance(time.Millisecond)
		c := testClient(t, fc, servers.KeyServers(), WithRetryCount(-1))
		go func() { l, err := c.Acquire(bg, "job", ttl3); results <- lockResult{l, err} }()
		heldWithWaiters(t, holder, "job", i+1)
	}
	// advanceUntil moves the fake clock a millisecond at a time (the
	// waiters gather turns for 5 ms) until done, within 100 ms: far
	// below the holder's TTL and a waiter's poll of its line.
	advanceUntil := func(what string, done func() bool) {
		t.Helper()
		for range 100 {
			if done() {
				return
			}
			fc.Advance(time.Millisecond)
			time.Sleep(time.Millisecond)
		}
		require.Eventually(t, done, wait, time.Millisecond, what)
	}
	// The holder lets go of server 2 only: promised to the earlier waiter,
	// which claims it, is refused by the holder on 0 and 1, and gives it
	// back.
	_, err = servers[2].Release(bg, h.key, h.token)
	require.NoError(t, err)
	var gaveBack string
	advanceUntil("the earlier waiter's give-back on server 2", func() bool {
		for _, c := range servers[2].Calls() {
			if c.Op == static.OpRelease && c.Token != h.token && c.Done {
				gaveBack = c.Token
				return true
			}
		}
		return false
	})
	// The clock stands: each waiter told of a promise gathers the others'
	// turns, and the promise stays where it was made.
	st2, err := servers[2].Inspect(bg, keyserver.NameKeys{Lock: h.key, Semaphore: layout.SemaphoreKey(h.key), RW: layout.RWKey(h.key), Election: layout.ElectionKey(h.key)})
	require.NoError(t, err)
	assert.Equal(t, keyserver.PromiseOf(gaveBack), st2.Lock.Token, "server 2 promised to the waiter that gave it back, not to the one behind it")
	// Then of server 1: the earlier waiter is promised 1 and 2.
	_, err = servers[1].Release(bg, h.key, h.token)
	require.NoError(t, err)
	var first lockResult
	advanceUntil("a waiter granted", func() bool {
		select {
		case first = <-results:
			return true
		default:
			return false
		}
	})
	require.NoError(t, first.err)
	st, err := holder.Inspect(bg, "job")
	require.NoError(t, err)
	require.NoError(t, first.lock.Release(bg))
	var second lockResult
	advanceUntil("the other waiter granted", func() bool {
		select {
		case second = <-results:
			return true
		default:
			return false
		}
	})
	require.NoError(t, second.err)
	assert.Equal(t, -1, keyserver.Compare(first.lock.token, second.lock.token),
		"the earlier waiter is granted first; servers at the first grant: %+v", st.Servers)
	require.NoError(t, second.lock.Release(bg))
	_, err = servers[0].Release(bg, h.key, h.token) // the holder's last server
	require.NoError(t, err)
}

// heldWithWaiters waits until every server of c holds name's key with n
// callers in its line.
func heldWithWaiters(t *testing.T, c *Client, name string, n int) {
	t.Helper()
	require.Eventually(t, func() bool {
		st, err := c.Inspect(bg, name)
		if err != nil {
			return false
		}
		for _, s := range st.Servers {
			if s.Err != nil || !s.View.Held || s.View.Waiters != n {
				return false
			}
		}
		return true
	}, wait, time.Millisecond, "%q held with %d in line on every server", name, n)
}

// TestALeaverStopsBlocking: a waiter whose context ends leaves the lines,
// so the next one is served at the release; a waiter that vanished
// without leaving (a crashed process) blocks the next one for a claim's
// time, not more than about a second.
func TestALeaverStopsBlocking(t *testing.T) {
	fc := clock.NewFake(t0)
	ks := memoryServers(t, fc, 3)
	holder := testClient(t, fc, ks)
	l, err := holder.Acquire(bg, "job", time.Minute)
	require.NoError(t, err)

	fc.Advance(time.Millisecond)
	ctx, cancel := context.WithCancel(bg)
	leaver := testClient(t, fc, ks)
	left := make(chan error, 1)
	go func() { _, err := leaver.Acquire(ctx, "job", time.Minute); left <- err }()
	_, err = fc.BlockUntilSleepers(1, wait)
	require.NoError(t, err)
	// A waiter that crashed: its place in line on every server, and nobody
	// to claim it.
	fc.Advance(time.Millisecond)
	ghost := fmt.Sprintf("%016x.%08x%024x", fc.Now().UnixMilli(), 0, 0)
	for _, s := range ks {
		ok, _, err := s.(keyserver.Notifier).AcquireInLine(bg, "job", ghost, time.Minute, "")
		require.NoError(t, err)
		require.False(t, ok)
	}
	fc.Advance(time.Millisecond)
	next := testClient(t, fc, ks, WithRetryCount(-1))
	done := make(chan lockResult, 1)
	go func() { l, err := next.Acquire(bg, "job", time.Minute); done <- lockResult{l, err} }()
	_, err = fc.BlockUntilSleepers(2, wait)
	require.NoError(t, err)

	cancel()
	require.ErrorIs(t, <-left, context.Canceled)
	require.NoError(t, l.Release(bg)) // promised to the ghost, which never claims it
	released := fc.Now()
	advanceUntil(t, fc, doneOf(done))
	r := <-done
	require.NoError(t, r.err)
	waited := fc.Now().Sub(released)
	assert.GreaterOrEqual(t, waited, layout.ClaimTTL, "the ghost's promise was skipped")
	assert.LessOrEqual(t, waited, renewEvery, "the ghost blocked the next waiter for %v", waited)
	require.NoError(t, r.lock.Release(bg))
}

// doneOf returns a channel closed once c holds a value, without taking it.
func doneOf[T any](c chan T) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		v := <-c
		c <- v
		close(done)
	}()
	return done
}

// TestSplitVoteEarliestKeeps: an attempt granted some servers and refused
// by the others, whose holders all began after it, keeps its servers and
// completes its quorum when they give way; the next attempt sends the same
// token. Refused by a holder that began first, it gives its servers back
// at once, and DoOrSkip skips.
func TestSplitVoteEarliestKeeps(t *testing.T) {
	t.Run("earliest keeps", func(t *testing.T) {
		fc := clock.NewFake(t0)
		servers := static.NewCluster(5)
		for i := 2; i < 5; i++ {
			// The refusals come last, so that the vote counts the grants.
			servers[i].Script(static.OpAcquire, static.Reply{Rank: 1, Left: time.Minute, Delay: 20 * time.Millisecond}, static.Grant)
		}
		c := testClient(t, fc, servers.KeyServers(), WithRetryDelay(time.Minute))
		res := async(t, func() error {
			_, err := c.Acquire(bg, "job", ttl3) // scripted grants: nothing to release
			return err
		})
		_, err := fc.BlockUntilSleepers(1, wait) // refused by 2, 3 and 4: waits
		require.NoError(t, err)
		assert.Zero(t, servers.Count(static.OpRelease), "the servers it was granted were given back")
		for i := 2; i < 5; i++ {
			servers[i].Wake("job") // the others gave way
		}
		require.NoError(t, res())
		require.NoError(t, c.Close()) // the calls it left running have ended
		for i, s := range servers {
			var tokens []string
			for _, call := range s.Calls() {
				if call.Op == static.OpAcquire {
					tokens = append(tokens, call.Token)
				}
			}
			require.Len(t, tokens, 2, "server %d", i)
			assert.Equal(t, tokens[0], tokens[1], "server %d: the second attempt sent another token", i)
		}
	})
	t.Run("later gives way", func(t *testing.T) {
		fc := clock.NewFake(t0)
		servers := static.NewCluster(5)
		for i := 2; i < 5; i++ {
			servers[i].Script(static.OpAcquire, static.Reply{Rank: -1, Left: time.Minute, Delay: 20 * time.Millisecond})
		}
		c := testClient(t, fc, servers.KeyServers())
		ran, err := c.DoOrSkip(bg, "job", ttl3, func(context.Context) error { return nil })
		require.NoError(t, err)
		assert.False(t, ran, "DoOrSkip ran while an earlier contender held servers")
		require.NoError(t, c.Close()) // the calls it left running have ended
		assert.Equal(t, 1, servers[0].Count(static.OpAcquire), "skipped at once")
		assert.Equal(t, 2, servers[0].Count(static.OpRelease)+servers[1].Count(static.OpRelease), "both servers it was granted given back")
	})
	t.Run("unranked holders: give way", func(t *testing.T) {
		fc := clock.NewFake(t0)
		servers := static.NewCluster(5)
		servers[2].Script(static.OpAcquire, static.Reply{Rank: 1, Delay: 20 * time.Millisecond})
		servers[3].Script(static.OpAcquire, static.Reply{Rank: 1, Delay: 20 * time.Millisecond})
		servers[4].Script(static.OpAcquire, static.Reply{Delay: 20 * time.Millisecond}) // another library's key
		c := testClient(t, fc, servers.KeyServers(), WithRetryCount(1))
		res := async(t, func() error {
			_, err := c.Acquire(bg, "job", ttl3)
			return err
		})
		ds, err := fc.BlockUntilSleepers(1, wait)
		require.NoError(t, err)
		fc.Advance(ds[0])
		require.ErrorIs(t, res(), ErrHeldElsewhere)
		require.NoError(t, c.Close()) // the calls it left running have ended
		var tokens []string
		for _, call := range servers[0].Calls() {
			if call.Op == static.OpAcquire {
				tokens = append(tokens, call.Token)
			}
		}
		require.Len(t, tokens, 2, "two attempts")
		assert.NotEqual(t, tokens[0], tokens[1], "the second attempt kept the token of the first")
	})
}

// awaitAcquires waits, in real time, until every server has received n
// acquires and answered every call it received: a fan-out decides on a
// quorum, and its last call may not have reached its server yet.
func awaitAcquires(t *testing.T, servers static.Cluster, n int) {
	t.Helper()
	deadline := time.Now().Add(wait)
	for _, s := range servers {
		for {
			done := s.Count(static.OpAcquire) >= n
			for _, c := range s.Calls() {
				done = done && c.Done
			}
			if done {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("a server call did not end")
			}
			time.Sleep(time.Millisecond)
		}
	}
}

// hidden is a key server whose Notifier methods are hidden, as a server
// written for an older version of the interface.
type hidden struct{ keyserver.KeyServer }

// TestMixedNotifyingServers: with one server of three that notifies, a
// waiter in another client is woken by its release message, and asks
// every server again; the others wake nobody.
func TestMixedNotifyingServers(t *testing.T) {
	fc := clock.NewFake(t0)
	servers := static.NewCluster(3)
	mixed := []keyserver.KeyServer{servers[0], hidden{servers[1]}, hidden{servers[2]}}
	holder := testClient(t, fc, mixed)
	waiter := testClient(t, fc, mixed, WithRetryDelay(time.Minute))
	l, err := holder.Acquire(bg, "job", ttl3)
	require.NoError(t, err)
	awaitAcquires(t, servers, 1) // the holder's call to the third server too
	done := make(chan error, 1)
	go func() {
		l, err := waiter.Acquire(bg, "job", ttl3)
		if err == nil {
			err = l.Release(bg)
		}
		done <- err
	}()
	_, err = fc.BlockUntilSleepers(1, wait)
	require.NoError(t, err)
	// The waiter's refusal by server 0, which puts it in line there, may
	// come after the refusals of the others decided its attempt.
	awaitAcquires(t, servers, 2)
	assert.Equal(t, 1, servers[0].Watching("job"), "the waiter watches the server that notifies")
	require.NoError(t, l.Release(bg)) // another client's release: heard through server 0 only
	deadline := time.Now().Add(wait)
	for servers[0].Count(static.OpAcquire) < 3 { // the holder's, the refused, the next
		if !time.Now().Before(deadline) {
			for _, c := range servers[0].Calls() {
				t.Log(c)
			}
			t.Fatal("the waiter was not woken by the release message")
		}
		time.Sleep(time.Millisecond)
	}
	assert.Equal(t, t0, fc.Now(), "woken without the clock moving")
	// Its attempt may have reached servers 1 and 2 before the holder's
	// release did; then the retry delay brings the next.
	for {
		select {
		case err := <-done:
			require.NoError(t, err)
			return
		default:
		}
		if ds, err := fc.BlockUntilSleepers(1, 50*time.Millisecond); err == nil {
			fc.Advance(ds[0])
		}
	}
}

// TestWaitEndsAtTheHoldersExpiry: a refusal that reports the holder's TTL
// bounds the wait, when no release comes, instead of the retry delay.
func TestWaitEndsAtTheHoldersExpiry(t *testing.T) {
	fc := clock.NewFake(t0)
	servers := static.NewCluster(3)
	for _, s := range servers {
		s.Script(static.OpAcquire, static.Reply{Left: 700 * time.Millisecond}, static.Grant)
	}
	c := testClient(t, fc, servers.KeyServers(), WithRetryDelay(time.Minute))
	res := async(t, func() error {
		_, err := c.Acquire(bg, "job", ttl3) // scripted grants: nothing to release
		return err
	})
	ds, err := fc.BlockUntilSleepers(1, wait)
	require.NoError(t, err)
	assert.Equal(t, 700*time.Millisecond, ds[0], "the wait: the holder's TTL, not the retry delay")
	fc.Advance(ds[0])
	require.NoError(t, res())
}

// TestDoOrSkipRetriesInLine: a DoOrSkip that ranks first keeps the server
// it was granted in a split, and a waiter in line that was promised the
// others gives way to it with ReleaseInLine. That promises the key to the
// earliest call in line, so DoOrSkip's retry must be in line, or the key
// goes back to the waiter and neither ever has a quorum: with two of five
// servers down, DoOrSkip held one and the waiter two for as long as both
// tried (seen in tests/chaos).
func TestDoOrSkipRetriesInLine(t *testing.T) {
	fc := clock.NewFake(t0)
	live := memoryServers(t, fc, 3)
	servers := append(live, downServers(t, errors.New("connection refused"), 2)...)
	var attempts atomic.Int32
	c := testClient(t, fc, servers, WithRetryDelay(10*time.Millisecond), WithRetryJitter(0), WithRetryCount(1000),
		WithHooks(Hooks{Attempt: func(context.Context, Attempt) { attempts.Add(1) }}))
	// The waiter, played here on the servers, began after DoOrSkip; the
	// first two servers promised it the key, and another waits behind it.
	waiter := newToken(newRank(t0.Add(time.Hour)))
	behind := newToken(newRank(t0.Add(2 * time.Hour)))
	for _, s := range live[:2] {
		ns := s.(keyserver.Notifier)
		ok, err := ns.Acquire(bg, "job", "holder", time.Minute)
		require.True(t, ok)
		require.NoError(t, err)
		for _, w := range []string{waiter, behind} {
			ok, _, err = ns.AcquireInLine(bg, "job", w, time.Minute, "")
			require.False(t, ok)
			require.NoError(t, err)
		}
		ok, err = ns.Release(bg, "job", "holder")
		require.True(t, ok)
		require.NoError(t, err)
	}
	res := make(chan result, 1)
	running, done := make(chan struct{}), make(chan struct{})
	go func() {
		ran, err := c.DoOrSkip(bg, "job", time.Minute, func(context.Context) error {
			close(running)
			<-done // held while the test looks: the waiter is refused, not granted a free key
			return nil
		})
		res <- result{ran, err}
	}()
	for {
		if r, ok := sleepsOrReturns(t, fc, res); ok {
			t.Fatalf("DoOrSkip returned without running fn: %+v", r)
		}
		select {
		case <-running:
			close(done)
			r := <-res
			require.NoError(t, r.err)
			assert.True(t, r.ran, "DoOrSkip ranks first")
			return
		default:
		}
		// Without it the two keep what they hold for as long as they try.
		require.LessOrEqual(t, attempts.Load(), int32(10), "the waiter keeps what it was promised, DoOrSkip the server it kept")
		require.Less(t, fc.Now().Sub(t0), time.Minute, "DoOrSkip waits, and does not try")
		// The waiter's attempt: refused by DoOrSkip's server, it gives
		// back what it was granted, keeping its place in line.
		var granted []keyserver.Notifier
		for _, s := range live {
			ns := s.(keyserver.Notifier)
			ok, _, err := ns.AcquireInLine(bg, "job", waiter, time.Minute, "")
			require.NoError(t, err)
			if ok {
				granted = append(granted, ns)
			}
		}
		require.Less(t, len(granted), len(live), "the waiter was granted DoOrSkip's server")
		for _, ns := range granted {
			_, err := ns.ReleaseInLine(bg, "job", waiter)
			require.NoError(t, err)
		}
		fc.Advance(10 * time.Millisecond)
	}
}

// TestFencedDoOrSkipRetryDrawsItsFence: a fenced DoOrSkip reads the
// counters with its first attempt's grants (AcquireFenced), but its
// retries ask in line, whose grants read none, so it draws its fence once
// held, from 0 ("How a token is drawn" in docs/design.md): the fence it
// runs with is still above every earlier grant's, on a quorum.
func TestFencedDoOrSkipRetryDrawsItsFence(t *testing.T) {
	fc := clock.NewFake(t0)
	live := memoryServers(t, fc, 3)
	servers := append(live, downServers(t, errors.New("connection refused"), 2)...)
	c := testClient(t, fc, servers, WithRetryDelay(10*time.Millisecond), WithRetryJitter(0), WithFencing())
	// One server holds the key for another: the first attempt is granted
	// two of the five, refused one, and is retried.
	ok, err := live[0].Acquire(bg, "job", "holder", time.Minute)
	require.True(t, ok)
	require.NoError(t, err)
	counters := func() (n []uint64) {
		for _, s := range live {
			f, err := s.(keyserver.Fencer).RaiseFence(bg, "job", 0)
			require.NoError(t, err)
			n = append(n, f)
		}
		return n
	}
	for _, s := range live { // earlier grants drew up to 5
		_, err := s.(keyserver.Fencer).RaiseFence(bg, "job", 5)
		require.NoError(t, err)
	}
	res := make(chan result, 1)
	var fence uint64
	go func() {
		ran, err := c.DoOrSkip(bg, "job", time.Minute, func(ctx context.Context) error {
			l, _ := LockFromContext(ctx)
			fence = l.Fence()
			return nil
		})
		res <- result{ran, err}
	}()
	_, returned := sleepsOrReturns(t, fc, res)
	require.False(t, returned, "DoOrSkip ended after a split vote")
	assert.Equal(t, []uint64{5, 5, 5}, counters(), "the first attempt, not won, drew no fence")
	ok, err = live[0].Release(bg, "job", "holder")
	require.True(t, ok)
	require.NoError(t, err)
	fc.Advance(10 * time.Millisecond) // its retry delay
	var r result
	select {
	case r = <-res:
	case <-time.After(wait):
		t.Fatal("DoOrSkip still waits with the lock free")
	}
	require.NoError(t, r.err)
	require.True(t, r.ran)
	assert.Equal(t, uint64(6), fence, "the fence is drawn above every earlier grant's")
	assert.Equal(t, []uint64{6, 6, 6}, counters())
}

// sleepsOrReturns waits, in real time, until the call whose result res
// brings either sleeps on fc or returns, and reports its result if it did.
func sleepsOrReturns(t *testing.T, fc *clock.Fake, res <-chan result) (result, bool) {
	t.Helper()
	deadline := time.Now().Add(wait)
	for time.Now().Before(deadline) {
		select {
		case r := <-res:
			return r, true
		default:
		}
		if _, err := fc.BlockUntilSleepers(1, 10*time.Millisecond); err == nil {
			return result{}, false
		}
	}
	t.Fatal("the call neither slept nor returned")
	return result{}, false
}
