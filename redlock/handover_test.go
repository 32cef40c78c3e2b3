package redlock

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goredlock/goredlock/internal/clock"
	"github.com/goredlock/goredlock/keyserver/static"
)

// handed is what a waiter of handOverWaiters saw of the lock it was
// granted.
type handed struct {
	i            int
	until        time.Time
	token        string
	fence        uint64
	acquired     time.Time
	doneAtGrant  bool
	errAtGrant   error
	prevEnded    bool // the lock granted before it was released (Err, Done) when it was granted
	releaseError error
}

// handOverWaiters starts n calls of Acquire of "job" for ttl, call i on
// client(i), each 1 ms of fc after the one before (so that it ranks after
// it) and once the one before waits; each releases the lock as soon as it
// is granted, unless keep says to keep it until the test releases it.
// grants waits for them all and returns what each saw, in the order they
// were granted; prev is the lock held before the first waiter.
func handOverWaiters(t *testing.T, fc *clock.Fake, n int, ttl time.Duration, client func(i int) *Client, prev *Lock) (grants func() []handed) {
	t.Helper()
	var (
		mu   sync.Mutex
		got  []handed
		wg   sync.WaitGroup
		last = prev
	)
	for i := 0; i < n; i++ {
		fc.Advance(time.Millisecond)
		wg.Add(1)
		go func() {
			defer wg.Done()
			l, err := client(i).Acquire(bg, "job", ttl)
			if !assert.NoError(t, err, "waiter %d", i) {
				return
			}
			h := handed{i: i, until: l.Until(), token: l.Token(), fence: l.Fence(), acquired: l.acquired,
				doneAtGrant: closed(l.Done()), errAtGrant: l.Err()}
			mu.Lock()
			h.prevEnded = last.Err() != nil && closed(last.Done())
			last = l
			got = append(got, h)
			mu.Unlock()
			h.releaseError = l.Release(bg)
			assert.NoError(t, h.releaseError, "waiter %d's release", i)
		}()
		_, err := fc.BlockUntilSleepers(i+1, wait) // waiting, in the servers' lines or in the process
		require.NoError(t, err)
	}
	return func() []handed {
		wg.Wait()
		mu.Lock()
		defer mu.Unlock()
		return got
	}
}

// order returns the waiters' numbers in the order they were granted.
func order(hs []handed) []int {
	var o []int
	for _, h := range hs {
		o = append(o, h.i)
	}
	return o
}

// TestHandOverPassesInOrderWithoutServers: the calls of one client that
// wait for the lock it holds get it in the order they began, each passed
// the lock by the one before without a server call: the first waiter,
// refused and in the servers' lines, leaves them; the last holder releases
// on the servers. Each passed lock is a fresh grant to its holder (Err nil,
// Done open), the one before it already released; its Until is the
// quorum's (the first grant's here: nothing was extended), its token the
// one the servers hold.
func TestHandOverPassesInOrderWithoutServers(t *testing.T) {
	fc := clock.NewFake(t0)
	servers := static.NewCluster(3)
	c := testClient(t, fc, servers.KeyServers(), WithRetryDelay(time.Minute))
	first, err := c.Acquire(bg, "job", time.Minute)
	require.NoError(t, err)
	const n = 8
	grants := handOverWaiters(t, fc, n, time.Minute, func(int) *Client { return c }, first)
	c.bg.Wait()
	before, acquires := len(servers[0].Calls()), servers.Count(static.OpAcquire)
	require.NoError(t, first.Release(bg))
	assert.ErrorIs(t, first.Err(), ErrNotHeld)
	assert.True(t, closed(first.Done()))
	hs := grants()
	c.bg.Wait()
	assert.Equal(t, []int{0, 1, 2, 3, 4, 5, 6, 7}, order(hs), "the order of the grants")
	for _, h := range hs {
		assert.NoError(t, h.errAtGrant, "waiter %d: Err at its grant", h.i)
		assert.False(t, h.doneAtGrant, "waiter %d: Done at its grant", h.i)
		assert.True(t, h.prevEnded, "waiter %d: the lock before it was not released when it was granted", h.i)
		assert.Equal(t, first.Until(), h.until, "waiter %d: Until is the quorum's", h.i)
		assert.Equal(t, first.Token(), h.token, "waiter %d: the token the servers hold", h.i)
		assert.Equal(t, fc.Now(), h.acquired, "waiter %d: held from the pass", h.i)
	}
	// Server calls of 8 grants: the first waiter leaves the line (where
	// it may be), the last holder releases.
	releases := 0
	for _, call := range servers[0].Calls()[before:] {
		switch call.Op {
		case static.OpRelease:
			releases++
			assert.Equal(t, first.Token(), call.Token)
		case static.OpLeaveLine:
		default:
			t.Errorf("a %s call", call.Op)
		}
	}
	assert.Equal(t, 1, releases)
	assert.Equal(t, acquires, servers.Count(static.OpAcquire), "no acquisition asked the servers")
	for i, s := range servers {
		assert.Zero(t, s.Watching("job"), "server %d: a watch outlived its call", i)
	}
}

// TestHandOverBoundedByBudget: a client's calls overtake a waiter of
// another client (another process) only within the budget, here two passes
// or 10 ms of the clock: then the lock goes back to the servers, whose line
// grants it to that waiter, and the client's next call after it. With
// hand-over off the order is the servers' line, first come, first served.
func TestHandOverBoundedByBudget(t *testing.T) {
	for _, tc := range []struct {
		name  string
		opts  []Option
		step  time.Duration // of the clock between grants
		order []int
	}{
		{"off", []Option{WithHandOver(NoHandOver)}, 0, []int{0, 1, 2, 3, 4}},
		{"two passes", []Option{WithHandOverPasses(2)}, 0, []int{0, 2, 1, 3, 4}},
		{"10 ms", nil, 2 * time.Millisecond, []int{0, 2, 1, 3, 4}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fc := clock.NewFake(t0)
			servers := static.NewCluster(3)
			opts := []ClientOption{WithRetryDelay(time.Minute)}
			for _, o := range tc.opts {
				opts = append(opts, o)
			}
			a := testClient(t, fc, servers.KeyServers(), opts...)
			b := testClient(t, fc, servers.KeyServers(), opts...)
			first, err := a.Acquire(bg, "job", time.Minute)
			require.NoError(t, err)
			// a's first waiter, then b's (another process), then a's others.
			client := func(i int) *Client {
				if i == 1 {
					return b
				}
				return a
			}
			var mu sync.Mutex
			var got []int
			var wg sync.WaitGroup
			for i := range 5 {
				fc.Advance(time.Millisecond)
				wg.Add(1)
				go func() {
					defer wg.Done()
					l, err := client(i).Acquire(bg, "job", time.Minute)
					if !assert.NoError(t, err, "waiter %d", i) {
						return
					}
					mu.Lock()
					got = append(got, i)
					mu.Unlock()
					fc.Advance(tc.step)
					assert.NoError(t, l.Release(bg))
				}()
				_, err := fc.BlockUntilSleepers(i+1, wait)
				require.NoError(t, err)
			}
			fc.Advance(tc.step)
			require.NoError(t, first.Release(bg))
			wg.Wait()
			assert.Equal(t, tc.order, got, "the order of the grants")
		})
	}
}

// TestHandOverToDoKeepsItAlive: a lock passed to a Do is its lock as a
// grant would be: the holder's lock is released first (ErrNotHeld, Done
// closed), the new one is held (Err nil, Done open) until the quorum's
// Until, and Do's keep-alive extends it on the servers, with the token they
// hold, when its first extension is due; Do then releases it there.
func TestHandOverToDoKeepsItAlive(t *testing.T) {
	fc := clock.NewFake(t0)
	servers := static.NewCluster(3)
	c := testClient(t, fc, servers.KeyServers(), WithRetryDelay(time.Minute))
	const ttl = 3 * time.Second // keep-alive every second
	h, err := c.Acquire(bg, "job", ttl)
	require.NoError(t, err)
	inFn := make(chan *Lock, 1)
	finish := make(chan struct{})
	done := async(t, func() error {
		return c.Do(bg, "job", ttl, func(ctx context.Context) error {
			l, _ := LockFromContext(ctx)
			inFn <- l
			<-finish
			return nil
		})
	})
	_, err = fc.BlockUntilSleepers(1, wait) // refused, in line
	require.NoError(t, err)
	fc.Advance(time.Millisecond)
	require.NoError(t, h.Release(bg))
	l := <-inFn
	assert.ErrorIs(t, h.Err(), ErrNotHeld, "the holder's lock")
	assert.True(t, closed(h.Done()))
	assert.NoError(t, l.Err(), "the passed lock")
	assert.False(t, closed(l.Done()))
	assert.Equal(t, Held, l.Health())
	assert.Equal(t, h.Until(), l.Until(), "the quorum's validity")
	assert.Equal(t, h.Token(), l.Token())

	// The keep-alive's first extension is due a third of the TTL after
	// the grant on the servers, not after the pass.
	ds, err := fc.BlockUntilSleepers(1, wait)
	require.NoError(t, err)
	assert.Equal(t, time.Second-time.Millisecond, ds[0], "the keep-alive's wait")
	fc.Advance(ds[0])
	require.Eventually(t, func() bool { return servers.Count(static.OpExtend) == 3 }, wait, time.Millisecond, "the extension")
	require.Eventually(t, func() bool { return l.Until().Equal(t0.Add(time.Second + ttl - drift(ttl, DefaultDriftFactor))) },
		wait, time.Millisecond, "Until after the extension")
	for _, s := range servers {
		for _, call := range s.Calls() {
			if call.Op == static.OpExtend {
				assert.Equal(t, h.Token(), call.Token)
			}
		}
	}
	close(finish)
	require.NoError(t, done())
	assert.ErrorIs(t, l.Err(), ErrNotHeld)
	c.bg.Wait()
	var ops []static.Op
	for _, call := range servers[0].Calls() {
		if call.Token == h.Token() && call.Op != static.OpLeaveLine { // a grant leaves the lines where it was not seen
			ops = append(ops, call.Op)
		}
	}
	if len(ops) > 0 && ops[0] == static.OpAcquire {
		ops = ops[1:] // the holder's grant, unless the quorum was in before this server was asked
	}
	assert.Equal(t, []static.Op{static.OpExtend, static.OpRelease}, ops,
		"the calls of the holder's token after its grant: the keep-alive's extension, Do's release")
}

// TestHandOverNeedsValidity: a lock is passed only while it has more than
// a third of its TTL left (here more than its loss margin and a server
// timeout too): a passed lock is not at risk when it arrives. Below that,
// the waiter gets it from the servers.
func TestHandOverNeedsValidity(t *testing.T) {
	for _, tc := range []struct {
		held   time.Duration
		passed bool
	}{
		{30 * time.Second, true},  // 29.4 s left of a minute: passed
		{45 * time.Second, false}, // 14.4 s left: below 20 s
	} {
		t.Run(tc.held.String(), func(t *testing.T) {
			fc := clock.NewFake(t0)
			servers := static.NewCluster(3)
			c := testClient(t, fc, servers.KeyServers(), WithRetryDelay(time.Minute), WithHandOver(time.Hour))
			h, err := c.Acquire(bg, "job", time.Minute)
			require.NoError(t, err)
			got := async(t, func() lockResult { l, err := c.Acquire(bg, "job", time.Minute); return lockResult{l, err} })
			_, err = fc.BlockUntilSleepers(1, wait)
			require.NoError(t, err)
			fc.Advance(tc.held)
			_, err = fc.BlockUntilSleepers(1, wait) // it tried again at its poll, and waits
			require.NoError(t, err)
			require.NoError(t, h.Release(bg))
			r := got()
			require.NoError(t, r.err)
			if tc.passed {
				assert.Equal(t, h.Token(), r.lock.Token(), "passed")
				assert.Equal(t, h.Until(), r.lock.Until())
			} else {
				assert.NotEqual(t, h.Token(), r.lock.Token(), "granted by the servers")
				assert.True(t, r.lock.Until().After(h.Until()))
			}
			require.NoError(t, r.lock.Release(bg))
		})
	}
}

// TestHandOverRaisesTheFence: with fencing, each pass raises the fence on
// the servers (one call each, no acquisition), strictly above the holder's.
func TestHandOverRaisesTheFence(t *testing.T) {
	fc := clock.NewFake(t0)
	servers := static.NewCluster(3)
	c := testClient(t, fc, servers.KeyServers(), WithRetryDelay(time.Minute), WithFencing())
	first, err := c.Acquire(bg, "job", time.Minute)
	require.NoError(t, err)
	const n = 5
	grants := handOverWaiters(t, fc, n, time.Minute, func(int) *Client { return c }, first)
	c.bg.Wait()
	acquires, raises := servers.Count(static.OpAcquire), servers.Count(static.OpRaiseFence)
	require.NoError(t, first.Release(bg))
	hs := grants()
	c.bg.Wait()
	assert.Equal(t, []int{0, 1, 2, 3, 4}, order(hs))
	prev := first.Fence()
	for _, h := range hs {
		assert.Greater(t, h.fence, prev, "waiter %d's fence", h.i)
		prev = h.fence
	}
	assert.Equal(t, acquires, servers.Count(static.OpAcquire), "no acquisition")
	assert.Equal(t, raises+3*n, servers.Count(static.OpRaiseFence), "one round per pass")
	current, err := c.CheckFence(bg, "job", prev)
	require.NoError(t, err)
	assert.True(t, current, "the last holder's fence is the servers'")
}

// TestHandOverOnlyToTheSameGrant: a call that asked for another TTL is not
// passed the lock: the servers grant it, in its turn.
func TestHandOverOnlyToTheSameGrant(t *testing.T) {
	fc := clock.NewFake(t0)
	servers := static.NewCluster(3)
	c := testClient(t, fc, servers.KeyServers(), WithRetryDelay(time.Minute))
	h, err := c.Acquire(bg, "job", time.Minute)
	require.NoError(t, err)
	got := async(t, func() lockResult { l, err := c.Acquire(bg, "job", 2*time.Minute); return lockResult{l, err} })
	_, err = fc.BlockUntilSleepers(1, wait)
	require.NoError(t, err)
	require.NoError(t, h.Release(bg))
	r := got()
	require.NoError(t, r.err)
	assert.NotEqual(t, h.Token(), r.lock.Token(), "granted by the servers")
	require.NoError(t, r.lock.Release(bg))
}

// TestHandOverWaitIsBoundedByTheHoldersLoss: the call at the front of a
// client's queue waits in the process while another call of the client
// holds the lock and may pass it, but no longer than that lock is valid: a
// holder that hangs does not keep it from the servers' line.
func TestHandOverWaitIsBoundedByTheHoldersLoss(t *testing.T) {
	fc := clock.NewFake(t0)
	servers := static.NewCluster(3)
	c := testClient(t, fc, servers.KeyServers(), WithRetryDelay(time.Minute), WithHandOver(time.Hour))
	const ttl = 3 * time.Second
	h, err := c.Acquire(bg, "job", ttl)
	require.NoError(t, err)
	got0 := async(t, func() lockResult { l, err := c.Acquire(bg, "job", ttl); return lockResult{l, err} })
	_, err = fc.BlockUntilSleepers(1, wait)
	require.NoError(t, err)
	require.NoError(t, h.Release(bg)) // passed to the waiter, which holds it from now on
	r0 := got0()
	require.NoError(t, r0.err)
	c.bg.Wait()
	acquires := servers.Count(static.OpAcquire)
	got1 := async(t, func() lockResult { l, err := c.Acquire(bg, "job", ttl); return lockResult{l, err} })
	ds, err := fc.BlockUntilSleepers(1, wait) // waiting for a pass, in the process
	require.NoError(t, err)
	lossAt := r0.lock.Until().Add(-2 * (ttl / 20))
	assert.Equal(t, lossAt.Sub(fc.Now()), ds[0], "it waits until the holder's loss")
	assert.Equal(t, acquires, servers.Count(static.OpAcquire), "no attempt while it may be passed the lock")
	fc.Advance(ds[0])
	_, err = fc.BlockUntilSleepers(1, wait) // then it asks the servers, is refused, and waits in line
	require.NoError(t, err)
	assert.GreaterOrEqual(t, servers.Count(static.OpAcquire), acquires+2, "an attempt once the holder's lock is lost")
	assert.ErrorIs(t, r0.lock.Err(), ErrLockLost)
	assert.ErrorIs(t, r0.lock.Release(bg), ErrLockLost)
	r1 := got1()
	require.NoError(t, r1.err)
	require.NoError(t, r1.lock.Release(bg))
}

// TestHandOverGivenBack: a pass that the call it went to does not take
// (its context ended, the client closes, the validity ran low) goes on to
// the next call when it still may, and else back to the servers, whose
// line grants it.
func TestHandOverGivenBack(t *testing.T) {
	for _, again := range []bool{true, false} {
		t.Run(map[bool]string{true: "to the next call", false: "to the servers"}[again], func(t *testing.T) {
			fc := clock.NewFake(t0)
			servers := static.NewCluster(3)
			c := testClient(t, fc, servers.KeyServers(), WithRetryDelay(time.Minute))
			h, err := c.Acquire(bg, "job", time.Minute)
			require.NoError(t, err)
			got := async(t, func() lockResult { l, err := c.Acquire(bg, "job", time.Minute); return lockResult{l, err} })
			_, err = fc.BlockUntilSleepers(1, wait)
			require.NoError(t, err)
			// h released as Release does, and its pass given back by a call
			// that gave up.
			h.op.Lock()
			h.mu.Lock()
			h.released = true
			p := h.passing()
			h.end(ErrNotHeld)
			h.mu.Unlock()
			h.op.Unlock()
			require.NotNil(t, p)
			c.giveBack(bg, h.name, h.key, p, again)
			r := got()
			require.NoError(t, r.err)
			if again {
				assert.Equal(t, h.Token(), r.lock.Token(), "passed on")
			} else {
				assert.NotEqual(t, h.Token(), r.lock.Token(), "granted by the servers")
			}
			require.NoError(t, r.lock.Release(bg))
		})
	}
}
