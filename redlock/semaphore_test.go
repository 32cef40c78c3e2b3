package redlock

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goredlock/goredlock/internal/clock"
	"github.com/goredlock/goredlock/keyserver"
	"github.com/goredlock/goredlock/keyserver/static"
)

// occupancy counts the holders of a primitive at once, by kind, and the
// most there ever were.
type occupancy struct {
	mu       sync.Mutex
	now, max map[string]int
}

func newOccupancy() *occupancy {
	return &occupancy{now: make(map[string]int), max: make(map[string]int)}
}

// enter counts a holder of kind in, and returns the counts then.
func (o *occupancy) enter(kind string) map[string]int {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.now[kind]++
	o.max[kind] = max(o.max[kind], o.now[kind])
	snap := make(map[string]int, len(o.now))
	for k, v := range o.now {
		snap[k] = v
	}
	return snap
}

func (o *occupancy) leave(kind string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.now[kind]--
}

func (o *occupancy) most(kind string) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.max[kind]
}

// runWorkers runs n workers on fc's time until all have returned. It
// moves the clock to the next wake-up only when every worker still
// running sleeps on it (holding, or waiting for a retry) and the sleepers
// stay the same for a moment, so that time does not pass while one of
// them is acting. The workers must have no
// other sleepers beside them (no Do, no KeepAlive).
func runWorkers(t *testing.T, fc *clock.Fake, n int, work func(i int)) {
	t.Helper()
	var live atomic.Int64
	live.Store(int64(n))
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer live.Add(-1)
			work(i)
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	deadline := time.Now().Add(wait)
	for !closed(done) {
		if time.Now().After(deadline) {
			ds, _ := fc.BlockUntilSleepers(0, 0)
			t.Fatalf("workers not done after %v (at %v of fake time; %d running, sleeping: %v)", wait, fc.Now().Sub(t0), live.Load(), ds)
		}
		ds, err := fc.BlockUntilSleepers(int(max(live.Load(), 1)), 20*time.Millisecond)
		if err != nil || int64(len(ds)) < live.Load() {
			continue
		}
		// A worker woken by a server's watch still counts as a sleeper
		// until it runs: look again a moment later, and advance only if
		// nothing changed.
		time.Sleep(200 * time.Microsecond)
		again, err := fc.BlockUntilSleepers(len(ds), time.Millisecond)
		if err == nil && slices.Equal(ds, again) {
			fc.Advance(ds[0])
		}
	}
}

// TestSemaphoreHoldsAtMostPermits: 12 goroutines in 3 Clients take a
// 3-permit semaphore 4 times each, holding each permit 100 ms: never more
// than 3 hold at once, and 3 do.
func TestSemaphoreHoldsAtMostPermits(t *testing.T) {
	fc := clock.NewFake(t0)
	servers := memoryServers(t, fc, 3)
	clients := make([]*Client, 3)
	for i := range clients {
		clients[i] = testClient(t, fc, servers, WithRetryCount(-1))
	}
	occ := newOccupancy()
	runWorkers(t, fc, 12, func(i int) {
		sem := clients[i%3].Semaphore("pool", 3)
		for range 4 {
			l, err := sem.Acquire(bg, 10*time.Second)
			if !assert.NoError(t, err) {
				return
			}
			if n := occ.enter("permit")["permit"]; n > 3 {
				t.Errorf("%d holders of a 3-permit semaphore at once", n)
			}
			assert.NoError(t, fc.Sleep(bg, 100*time.Millisecond))
			occ.leave("permit")
			assert.NoError(t, l.Release(bg))
		}
	})
	assert.Equal(t, 3, occ.most("permit"), "the most holders at once")
}

// TestNaiveCounterAdmitsThreeSlotsRefuse: on five servers, a schedule of
// partitions gives each of three callers a different three servers, so
// that no server sees more than two of them. A semaphore of 2 permits that
// counted holders per server would grant all three (each reaches a
// majority of servers with a count under 2); the slot design refuses the
// third: the slots free on its servers differ, and none is free on three.
func TestNaiveCounterAdmitsThreeSlotsRefuse(t *testing.T) {
	reach := [][]int{{0, 1, 2}, {2, 3, 4}, {0, 1, 3}} // the servers each caller reaches

	// The naive design, on the same schedule: a count per server, a
	// holder admitted where the count is under the permits, granted on a
	// majority.
	counts := make([]int, 5)
	naive := 0
	for _, rs := range reach {
		admitted := 0
		for _, s := range rs {
			if counts[s] < 2 {
				admitted++
			}
		}
		if admitted >= 3 {
			naive++
			for _, s := range rs {
				counts[s]++
			}
		}
	}
	require.Equal(t, 3, naive, "holders the per-server counter admits")
	require.LessOrEqual(t, max(counts[0], counts[1], counts[2], counts[3], counts[4]), 2, "the most any server counted")

	fc := clock.NewFake(t0)
	servers := static.NewCluster(5, static.WithNow(fc.Now))
	c := testClient(t, fc, servers.KeyServers(), WithRetryCount(0))
	sem := c.Semaphore("pool", 2)
	unreachable := errors.New("partitioned")
	var held []*Lock
	for i, rs := range reach {
		for s := range servers {
			servers[s].Script(static.OpAcquirePermit, static.Fail(unreachable))
		}
		for _, s := range rs {
			servers[s].Script(static.OpAcquirePermit) // from the store
		}
		l, err := sem.TryAcquire(bg, time.Minute)
		if i < 2 {
			require.NoError(t, err, "caller %d, reaching servers %v", i, rs)
			held = append(held, l)
			continue
		}
		require.ErrorIs(t, err, ErrNotAcquired, "caller %d, reaching servers %v: a third holder of 2 permits", i, rs)
	}
	assert.NotEqual(t, held[0].kind.(*permitOps).slot, held[1].kind.(*permitOps).slot, "the two holders' slots")
}

// TestSemaphoreTryAcquireWhenFull: a full semaphore makes TryAcquire fail
// at once with ErrHeldElsewhere; a release lets the next in.
func TestSemaphoreTryAcquireWhenFull(t *testing.T) {
	fc := clock.NewFake(t0)
	c := testClient(t, fc, memoryServers(t, fc, 3))
	sem := c.Semaphore("pool", 2)
	a, err := sem.TryAcquire(bg, time.Minute)
	require.NoError(t, err)
	b, err := sem.TryAcquire(bg, time.Minute)
	require.NoError(t, err)
	_, err = sem.TryAcquire(bg, time.Minute)
	require.ErrorIs(t, err, ErrHeldElsewhere, "a third permit of two")
	require.NoError(t, a.Release(bg))
	d, err := sem.TryAcquire(bg, time.Minute)
	require.NoError(t, err, "a permit after a release")
	require.NoError(t, b.Release(bg))
	require.NoError(t, d.Release(bg))
}

// TestSemaphoreWaiterWokenByRelease: a waiting Acquire is granted the
// moment a permit is released, not by its retry delay nor by the renewal
// of its watches, also when it is held by another Client.
func TestSemaphoreWaiterWokenByRelease(t *testing.T) {
	fc := clock.NewFake(t0)
	servers := memoryServers(t, fc, 3)
	holder := testClient(t, fc, servers).Semaphore("pool", 1)
	waiter := testClient(t, fc, servers, WithRetryDelay(2*time.Second)).Semaphore("pool", 1)
	l, err := holder.Acquire(bg, time.Minute)
	require.NoError(t, err)
	got := async(t, func() lockResult { l, err := waiter.Acquire(bg, time.Minute); return lockResult{l, err} })
	ds, err := fc.BlockUntilSleepers(1, wait)
	require.NoError(t, err, "the waiter never waited")
	require.Equal(t, renewEvery, ds[0], "the waiter's wait: until it renews its watches")
	advanceBackOffs(t, fc, renewEvery)
	require.NoError(t, l.Release(bg))
	r := got()
	require.NoError(t, r.err)
	require.NoError(t, r.lock.Release(bg))
}

// TestSemaphorePermitsDiffer: a Client asking with another permit count
// than the one stored while held gets an error that says so, and the
// stored count is never exceeded.
func TestSemaphorePermitsDiffer(t *testing.T) {
	fc := clock.NewFake(t0)
	servers := memoryServers(t, fc, 3)
	a := testClient(t, fc, servers)
	b := testClient(t, fc, servers)
	l, err := a.Semaphore("pool", 1).Acquire(bg, time.Minute)
	require.NoError(t, err)
	_, err = b.Semaphore("pool", 5).Acquire(bg, time.Minute)
	require.ErrorIs(t, err, keyserver.ErrPermitsDiffer)
	assert.Contains(t, err.Error(), "asked with 5 permits, stored with 1")
	require.NoError(t, l.Release(bg))
	l, err = b.Semaphore("pool", 5).Acquire(bg, time.Minute)
	require.NoError(t, err, "another count once no permit is held")
	require.NoError(t, l.Release(bg))
}

// TestSemaphorePermitIsALock: a permit is extended, kept alive by Do and
// found by LockFromContext, and released, like a lock; its keys are its
// own, apart from a lock of the same name.
func TestSemaphorePermitIsALock(t *testing.T) {
	fc := clock.NewFake(t0)
	c := testClient(t, fc, memoryServers(t, fc, 3))
	sem := c.Semaphore("job", 1)
	lock, err := c.Acquire(bg, "job", time.Minute)
	require.NoError(t, err, "a lock of the semaphore's name")
	l, err := sem.Acquire(bg, time.Minute)
	require.NoError(t, err, "a permit beside a lock of the same name")
	assert.Equal(t, "job", l.Name())
	fc.Advance(30 * time.Second)
	require.NoError(t, l.Extend(bg, time.Minute))
	assert.Equal(t, fc.Now().Add(time.Minute-drift(time.Minute, DefaultDriftFactor)), l.Until())
	require.NoError(t, l.Release(bg))
	require.ErrorIs(t, l.Err(), ErrNotHeld)

	ran := false
	err = sem.Do(bg, time.Minute, func(ctx context.Context) error {
		got, ok := LockFromContext(ctx)
		require.True(t, ok)
		assert.Equal(t, "job", got.Name())
		_, err := sem.TryAcquire(bg, time.Minute)
		assert.ErrorIs(t, err, ErrHeldElsewhere, "a second permit of one, inside Do")
		ran = true
		return nil
	})
	require.NoError(t, err)
	assert.True(t, ran)
	require.NoError(t, lock.Release(bg))
}

// TestPrimitivesFence: with WithFencing, permits and write holds carry
// fencing tokens that rise with every grant of the name, as a lock's do.
func TestPrimitivesFence(t *testing.T) {
	fc := clock.NewFake(t0)
	c := testClient(t, fc, memoryServers(t, fc, 3), WithFencing())
	sem := c.Semaphore("pool", 2)
	m := c.RWMutex("table")
	var last, lastWrite uint64
	for i := range 3 {
		p, err := sem.Acquire(bg, time.Minute)
		require.NoError(t, err)
		w, err := m.Lock(bg, time.Minute)
		require.NoError(t, err)
		assert.Greater(t, p.Fence(), last, "permit %d's token", i)
		assert.Greater(t, w.Fence(), lastWrite, "write hold %d's token", i)
		last, lastWrite = p.Fence(), w.Fence()
		require.NoError(t, p.Release(bg))
		require.NoError(t, w.Release(bg))
	}
}

// TestSemaphoreCountIsFreeOnceReleased: on in-process key servers, once
// every permit of a semaphore is released, a call with another count is
// granted at once, however many permits it had (a Redis key server frees
// a count of more than 1,024 permits only when it lapses: see
// TestRedisLargeSemaphoreCountBindsUntilItLapses); while one is held, the
// other count is refused with ErrPermitsDiffer.
func TestSemaphoreCountIsFreeOnceReleased(t *testing.T) {
	fc := clock.NewFake(t0)
	c := testClient(t, fc, memoryServers(t, fc, 3), WithRetryCount(0))
	big := c.Semaphore("encoders", 5000)
	l, err := big.TryAcquire(bg, ttl3)
	require.NoError(t, err)
	_, err = c.Semaphore("encoders", 2).TryAcquire(bg, ttl3)
	require.ErrorIs(t, err, keyserver.ErrPermitsDiffer, "while a permit is held")
	require.NoError(t, l.Release(bg))
	l, err = c.Semaphore("encoders", 2).TryAcquire(bg, ttl3)
	require.NoError(t, err, "once every permit is released")
	require.NoError(t, l.Release(bg))
}

// TestPermitAttemptsAskForDistinctSlots: the attempts of one client on a
// semaphore, made through separate Semaphore values, ask for distinct
// slots while a candidate is left that no other asks for (the slots the
// refusals named free, else the few after the one picked), then share
// one; each attempt's end gives its slot back.
func TestPermitAttemptsAskForDistinctSlots(t *testing.T) {
	c, _ := memoryClient(t)
	o := &c.options
	key := c.Semaphore("pool", 3).key(o)
	attempt := func(next int, others ...int) holdKind {
		po := c.Semaphore("pool", 3).newPick(o)
		po.next, po.others = next, others
		return po.attempt()
	}
	var attempts []holdKind
	for range 4 {
		attempts = append(attempts, attempt(1))
	}
	assert.Equal(t, map[int]int{0: 1, 1: 2, 2: 1}, c.asked.slots[key], "three distinct slots, then the slot picked again")
	for _, a := range attempts {
		a.attempted()
	}
	assert.Empty(t, c.asked.slots, "every slot given back")

	first := attempt(0)
	second := attempt(0, 2)
	assert.Equal(t, map[int]int{0: 1, 2: 1}, c.asked.slots[key], "a slot the refusals named free, not the one after")
	first.attempted()
	second.attempted()
	assert.Empty(t, c.asked.slots)
}
