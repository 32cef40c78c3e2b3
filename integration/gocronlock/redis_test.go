package gocronlock_test

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-co-op/gocron/v2"
	redigo "github.com/gomodule/redigo/redis"
	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goredlock/goredlock/integration/gocronlock"
	"github.com/goredlock/goredlock/internal/redistest"
	"github.com/goredlock/goredlock/keyserver"
	"github.com/goredlock/goredlock/keyserver/redis"
	"github.com/goredlock/goredlock/redlock"
)

// The tests below run on three throwaway redis-server processes; with CI
// set they fail, never skip, when redis-server cannot be started.

// redisHost is one "host": its own connections to the nodes, its own
// client and Locker.
func redisHost(t *testing.T, nodes []*redistest.Node, opts ...gocronlock.Option) *gocronlock.Locker {
	t.Helper()
	var servers []keyserver.KeyServer
	for _, n := range nodes {
		s, err := redis.FromURL(n.URL(""))
		require.NoError(t, err)
		t.Cleanup(func() { s.Close() })
		servers = append(servers, s)
	}
	return newLocker(t, newClient(t, servers), opts...)
}

// jobRecord tallies the runs of one job on several hosts.
type jobRecord struct {
	start   time.Time     // the first tick
	every   time.Duration // the interval
	running atomic.Int32
	overlap atomic.Int32 // runs that began while another was running

	mu     sync.Mutex
	ticks  map[int][]string // tick → the hosts that ran it
	skips  map[string]int   // host → runs skipped with ErrHeldElsewhere
	errors []error          // Lock errors other than ErrHeldElsewhere
}

func newJobRecord(start time.Time, every time.Duration) *jobRecord {
	return &jobRecord{start: start, every: every, ticks: map[int][]string{}, skips: map[string]int{}}
}

// job returns the job function of host, which works for d.
func (r *jobRecord) job(host string, d time.Duration) func() {
	return func() {
		if r.running.Add(1) > 1 {
			r.overlap.Add(1)
		}
		defer r.running.Add(-1)
		tick := int((time.Since(r.start) + r.every/2) / r.every)
		r.mu.Lock()
		r.ticks[tick] = append(r.ticks[tick], host)
		r.mu.Unlock()
		time.Sleep(d)
	}
}

// lockError is host's gocron.AfterLockError listener.
func (r *jobRecord) lockError(host string) func(uuid.UUID, string, error) {
	return func(_ uuid.UUID, _ string, err error) {
		r.mu.Lock()
		defer r.mu.Unlock()
		if errors.Is(err, redlock.ErrHeldElsewhere) {
			r.skips[host]++
		} else {
			r.errors = append(r.errors, err)
		}
	}
}

// schedule starts a scheduler for host that runs the job called name
// every r.every from start, and shuts it down when the test ends.
func (r *jobRecord) schedule(t *testing.T, locker gocron.Locker, host, name string, start time.Time, d time.Duration) gocron.Scheduler {
	t.Helper()
	s, err := gocron.NewScheduler(gocron.WithDistributedLocker(locker))
	require.NoError(t, err)
	_, err = s.NewJob(gocron.DurationJob(r.every), gocron.NewTask(r.job(host, d)),
		gocron.WithName(name),
		gocron.WithStartAt(gocron.WithStartDateTime(start)),
		gocron.WithEventListeners(gocron.AfterLockError(r.lockError(host))))
	require.NoError(t, err)
	s.Start()
	t.Cleanup(func() { _ = s.Shutdown() })
	return s
}

// summary returns the runs per host and the ticks that ran more than once
// or never, among ticks 0 to n-1.
func (r *jobRecord) summary(n int) (perHost map[string]int, twice, never []int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	perHost = map[string]int{}
	for tick, hosts := range r.ticks {
		for _, h := range hosts {
			perHost[h]++
		}
		if len(hosts) > 1 {
			twice = append(twice, tick)
		}
	}
	for tick := 0; tick < n; tick++ {
		if len(r.ticks[tick]) == 0 {
			never = append(never, tick)
		}
	}
	sort.Ints(twice)
	return perHost, twice, never
}

func (r *jobRecord) String() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	ticks := make([]int, 0, len(r.ticks))
	for tick := range r.ticks {
		ticks = append(ticks, tick)
	}
	sort.Ints(ticks)
	s := ""
	for _, tick := range ticks {
		s += fmt.Sprintf(" %d:%v", tick, r.ticks[tick])
	}
	return fmt.Sprintf("runs by tick:%s; skips %v; other lock errors %v", s, r.skips, r.errors)
}

func shutdown(t *testing.T, schedulers ...gocron.Scheduler) {
	t.Helper()
	for _, s := range schedulers {
		require.NoError(t, s.Shutdown())
	}
}

// Two hosts whose schedulers fire together run a 100 ms job every second
// for ten seconds: each tick runs once, on one host, and never on both at
// once.
func TestTwoSchedulersOnRedis(t *testing.T) {
	nodes := redistest.Start(t, 3).Nodes
	const every, ticks = time.Second, 10
	start := time.Now().Add(300 * time.Millisecond)
	r := newJobRecord(start, every)
	a := r.schedule(t, redisHost(t, nodes), "a", "report", start, 100*time.Millisecond)
	b := r.schedule(t, redisHost(t, nodes), "b", "report", start, 100*time.Millisecond)

	time.Sleep(time.Until(start.Add((ticks-1)*every + every/2)))
	shutdown(t, a, b)

	perHost, twice, never := r.summary(ticks)
	t.Logf("runs per host %v; %v", perHost, r)
	total := perHost["a"] + perHost["b"]
	assert.InDelta(t, ticks, total, 1, "runs in %d ticks", ticks)
	assert.Empty(t, twice, "ticks run by both hosts")
	assert.LessOrEqual(t, len(never), 1, "ticks run by neither host: %v", never)
	assert.Zero(t, r.overlap.Load(), "runs that overlapped")
	r.mu.Lock()
	defer r.mu.Unlock()
	assert.Empty(t, r.errors, "Lock errors other than held elsewhere")
	assert.Equal(t, total, ticks*2-r.skips["a"]-r.skips["b"], "every run not made was skipped as held elsewhere")
}

// Host b fires 150 ms after host a, when a's 100 ms job has ended: the
// minimum hold makes b skip the run that a already made, and without it b
// runs the job a second time.
func TestMinHoldSkipsALateHost(t *testing.T) {
	nodes := redistest.Start(t, 3).Nodes
	const every, ticks, skew = time.Second, 3, 150 * time.Millisecond
	for _, tc := range []struct {
		name    string
		hold    time.Duration
		perTick int
	}{
		{"hold 500ms", 500 * time.Millisecond, 1},
		{"no hold", 0, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			start := time.Now().Add(300 * time.Millisecond)
			r := newJobRecord(start, every)
			name := "report-" + tc.name
			a := r.schedule(t, redisHost(t, nodes, gocronlock.WithMinHold(tc.hold)), "a", name, start, 100*time.Millisecond)
			b := r.schedule(t, redisHost(t, nodes, gocronlock.WithMinHold(tc.hold)), "b", name, start.Add(skew), 100*time.Millisecond)
			time.Sleep(time.Until(start.Add((ticks-1)*every + every/2)))
			shutdown(t, a, b)

			perHost, _, never := r.summary(ticks)
			t.Logf("runs per host %v; %v", perHost, r)
			assert.Empty(t, never)
			assert.Equal(t, ticks, perHost["a"], "the early host runs every tick")
			assert.Equal(t, ticks*(tc.perTick-1), perHost["b"], "runs of the late host")
			assert.Zero(t, r.overlap.Load(), "runs that overlapped")
		})
	}
}

// A job that runs for 2.5 TTLs keeps its lock: the other host is refused
// all along, and Unlock reports no loss.
func TestLongJobKeepsItsLock(t *testing.T) {
	nodes := redistest.Start(t, 3).Nodes
	const ttl = 600 * time.Millisecond
	var lost atomic.Int32
	a := redisHost(t, nodes, gocronlock.WithTTL(ttl), gocronlock.WithMinHold(0),
		gocronlock.WithOnLost(func(string) { lost.Add(1) }))
	b := redisHost(t, nodes, gocronlock.WithTTL(ttl), gocronlock.WithMinHold(0))

	var (
		probes  []error
		runDone = make(chan struct{})
	)
	s, err := gocron.NewScheduler(gocron.WithDistributedLocker(a))
	require.NoError(t, err)
	_, err = s.NewJob(gocron.OneTimeJob(gocron.OneTimeJobStartImmediately()), gocron.NewTask(func() {
		defer close(runDone)
		for i := 0; i < 5; i++ { // 0 to 1.5 s: 2.5 TTLs
			time.Sleep(ttl / 2)
			_, err := b.Lock(bg, "long")
			probes = append(probes, err)
		}
	}), gocron.WithName("long"))
	require.NoError(t, err)
	s.Start()
	select {
	case <-runDone:
	case <-time.After(10 * time.Second):
		t.Fatal("the job never ran")
	}
	require.NoError(t, s.Shutdown()) // returns after Unlock
	for i, err := range probes {
		assert.ErrorIs(t, err, redlock.ErrHeldElsewhere, "the other host's try %d, at %v", i, time.Duration(i+1)*ttl/2)
	}
	assert.Zero(t, lost.Load(), "losses")

	l, err := b.Lock(bg, "long")
	require.NoError(t, err, "released once the job ended")
	require.NoError(t, l.Unlock(bg))
}

// A lock lost while its job runs calls WithOnLost, and Unlock reports
// ErrLockLost.
func TestLostLockIsReported(t *testing.T) {
	nodes := redistest.Start(t, 3).Nodes
	const ttl = 600 * time.Millisecond
	lost := make(chan string, 1)
	a := redisHost(t, nodes, gocronlock.WithTTL(ttl), gocronlock.WithMinHold(0),
		gocronlock.WithOnLost(func(job string) { lost <- job }))
	b := redisHost(t, nodes, gocronlock.WithTTL(ttl), gocronlock.WithMinHold(0))

	la, err := a.Lock(bg, "report")
	require.NoError(t, err)
	for _, n := range nodes { // every lock key gone, as if each had expired
		flushAll(t, n.Addr())
		// The store keeps its marker: a store that lost it is quarantined
		// for a TTL (a restart), which is not what this test is about.
		n.SetHistory(time.Hour)
	}
	lb, err := b.Lock(bg, "report")
	require.NoError(t, err, "the keys were gone")
	select {
	case job := <-lost:
		assert.Equal(t, "report", job)
	case <-time.After(5 * time.Second):
		t.Fatal("the loss was never reported")
	}
	require.ErrorIs(t, la.Unlock(bg), redlock.ErrLockLost)
	require.NoError(t, lb.Unlock(bg))
}

func flushAll(t *testing.T, addr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(bg, 5*time.Second)
	defer cancel()
	c, err := redigo.DialContext(ctx, "tcp", addr)
	require.NoError(t, err)
	defer c.Close()
	_, err = c.Do("FLUSHALL")
	require.NoError(t, err)
}
