package redlock

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goredlock/goredlock/internal/clock"
	"github.com/goredlock/goredlock/internal/layout"
	"github.com/goredlock/goredlock/keyserver"
	"github.com/goredlock/goredlock/keyserver/static"
)

// observed collects what an Observe channel sends, until it closes.
type observed struct {
	mu     sync.Mutex
	values []string
	closed chan struct{}
}

func observeAll(ch <-chan string) *observed {
	o := &observed{closed: make(chan struct{})}
	go func() {
		defer close(o.closed)
		for v := range ch {
			o.mu.Lock()
			o.values = append(o.values, v)
			o.mu.Unlock()
		}
	}()
	return o
}

func (o *observed) last() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(o.values) == 0 {
		return "<nothing>"
	}
	return o.values[len(o.values)-1]
}

func (o *observed) all() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]string(nil), o.values...)
}

// TestElectionOneLeaderAtATime: 4 campaigners in 2 Clients: one leads
// at a time, Leader and Observe in a third Client report each leader's
// value while it leads, each term is greater than the one before, and
// each resignation hands over to the next campaigner within 500 ms, woken
// by the servers, not by the retry delay: the clock moves only past the
// short back-offs of campaigners that split the servers, unless for 10 s
// of real time nobody has led nor the clock moved, which fails the test.
func TestElectionOneLeaderAtATime(t *testing.T) {
	fc := clock.NewFake(t0)
	stopClock := make(chan struct{})
	defer close(stopClock)
	var (
		mu      sync.Mutex
		leading int
		calm    = time.Now() // the clock's last move or the last resignation, in real time
		stalls  int          // moves of the clock past a retry delay with nobody leading
	)
	go func() {
		for !closed(stopClock) {
			ds, err := fc.BlockUntilSleepers(1, 10*time.Millisecond)
			if err != nil {
				continue
			}
			mu.Lock()
			stalled := leading == 0 && time.Since(calm) > 10*time.Second && ds[0] <= time.Second
			move := ds[0] <= DefaultRetryDelay/4 || stalled
			if stalled {
				stalls++
			}
			if move {
				calm = time.Now()
			}
			mu.Unlock()
			if move {
				fc.Advance(ds[0])
			}
		}
	}()
	servers := memoryServers(t, fc, 3)
	clients := []*Client{testClient(t, fc, servers), testClient(t, fc, servers)}
	watcher := testClient(t, fc, servers).Election("primary")
	octx, stopObserving := context.WithCancel(bg)
	obs := observeAll(watcher.Observe(octx))
	require.Eventually(t, func() bool { return obs.last() == "" }, wait, time.Millisecond, "Observe's first value with nobody leading")

	var (
		order    []string
		terms    []uint64
		resigned time.Time
		gaps     []time.Duration
		wg       sync.WaitGroup
	)
	for i := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			value := fmt.Sprintf("campaigner-%d", i)
			l, err := clients[i%2].Election("primary").Campaign(bg, 10*time.Second, value)
			if !assert.NoError(t, err) {
				return
			}
			mu.Lock()
			leading++
			if leading > 1 {
				t.Errorf("%d leaders at once", leading)
			}
			order, terms = append(order, value), append(terms, l.Fence())
			if !resigned.IsZero() {
				gaps = append(gaps, fc.Since(resigned))
			}
			mu.Unlock()
			got, err := watcher.Leader(bg)
			assert.NoError(t, err)
			assert.Equal(t, value, got, "Leader from another Client")
			assert.Eventually(t, func() bool { return obs.last() == value }, wait, time.Millisecond, "Observe from another Client")
			mu.Lock()
			leading--
			resigned, calm = fc.Now(), time.Now()
			mu.Unlock()
			assert.NoError(t, l.Release(bg))
		}()
	}
	wg.Wait()
	stopObserving()
	<-obs.closed
	assert.Len(t, order, 4, "leaderships")
	for i := 1; i < len(terms); i++ {
		assert.Greater(t, terms[i], terms[i-1], "term %d after term %d", i, i-1)
	}
	assert.Positive(t, terms[0], "the first term")
	values := obs.all()
	var leaders []string
	for i, v := range values {
		if i > 0 {
			assert.NotEqual(t, values[i-1], v, "Observe sent %q twice in a row: %q", v, values)
		}
		if v != "" {
			leaders = append(leaders, v)
		}
	}
	assert.Equal(t, order, leaders, "the leaders Observe reported")
	for i, gap := range gaps {
		assert.LessOrEqual(t, gap, 500*time.Millisecond, "hand-over %d: from a resignation to the next leader", i+1)
	}
	mu.Lock()
	assert.Zero(t, stalls, "campaigners left asleep for their retry delay by a resignation they missed")
	mu.Unlock()
	t.Logf("hand-overs: %v", gaps)
	_, err := watcher.Leader(bg)
	assert.ErrorIs(t, err, ErrNoLeader, "Leader once everyone resigned")
}

// TestLeadershipOutlivesItsTTLAndResignsWithCtx: a leader is kept alive
// in the background past its TTL, and resigns when its ctx ends: the next
// campaigner leads at once.
func TestLeadershipOutlivesItsTTLAndResignsWithCtx(t *testing.T) {
	fc := clock.NewFake(t0)
	servers := memoryServers(t, fc, 3)
	e := testClient(t, fc, servers).Election("primary")
	other := testClient(t, fc, servers).Election("primary")
	ctx, cancel := context.WithCancel(bg)
	l, err := e.Campaign(ctx, 3*time.Second, "a")
	require.NoError(t, err)
	first := l.Fence()
	sleeps(t, fc, 10) // ten keep-alive intervals: 10 s of a 3 s TTL
	require.NoError(t, l.Err())
	got, err := other.Leader(bg)
	require.NoError(t, err)
	assert.Equal(t, "a", got, "the leader past its TTL")

	next := async(t, func() lockResult { l, err := other.Campaign(bg, 3*time.Second, "b"); return lockResult{l, err} })
	_, err = fc.BlockUntilSleepers(2, wait) // the keep-alive and the waiting campaigner
	require.NoError(t, err)
	// The campaigner's wait is a retry delay, at least half the default
	// with jitter: the clock moves past back-offs only.
	advanceBackOffs(t, fc, DefaultRetryDelay/2)
	cancel()
	r := next()
	require.NoError(t, r.err, "the next leader, after a resignation")
	assert.Greater(t, r.lock.Fence(), first, "the next term")
	assert.ErrorIs(t, l.Err(), ErrNotHeld, "the resigned leadership")
	require.NoError(t, r.lock.Release(bg))
}

// TestCampaignContextIsTheLeadershipsLifetime: the ctx given to Campaign
// bounds the leadership, not only the wait: a ctx with a 5 s timeout
// around Campaign resigns a leadership that is kept alive well past its
// 3 s TTL exactly at that timeout (Err reports ErrNotHeld: resigned, not
// lost), and the election has no leader from then on.
func TestCampaignContextIsTheLeadershipsLifetime(t *testing.T) {
	fc := clock.NewFake(t0)
	servers := memoryServers(t, fc, 3)
	e := testClient(t, fc, servers).Election("primary")
	watcher := testClient(t, fc, servers).Election("primary")
	ctx, cancel := fc.WithTimeout(bg, 5*time.Second)
	defer cancel()
	l, err := e.Campaign(ctx, 3*time.Second, "a")
	require.NoError(t, err, "Campaign returns once it leads, long before the timeout")

	// Four keep-alive intervals, 4 s of a 3 s TTL; then the next
	// keep-alive wait, due at 5 s, has begun.
	sleeps(t, fc, 4)
	_, err = fc.BlockUntilSleepers(1, wait)
	require.NoError(t, err)
	fc.Advance(999 * time.Millisecond)
	require.NoError(t, l.Err(), "still leading a millisecond before the timeout")
	got, err := watcher.Leader(bg)
	require.NoError(t, err)
	assert.Equal(t, "a", got)

	fc.Advance(time.Millisecond)
	select {
	case <-l.Done():
	case <-time.After(wait):
		t.Fatal("the leadership outlived its Campaign's ctx")
	}
	require.ErrorIs(t, l.Err(), ErrNotHeld, "resigned")
	require.NotErrorIs(t, l.Err(), ErrLockLost, "resigned, not lost")
	assert.Equal(t, t0.Add(5*time.Second), fc.Now(), "at the timeout")
	require.Eventually(t, func() bool { // the resignation's calls reach the servers
		_, err := watcher.Leader(bg)
		return errors.Is(err, ErrNoLeader)
	}, wait, time.Millisecond, "no leader once the Campaign's ctx ended")
}

// TestLeadershipLostWhenAMajorityFails: when a majority of servers stop
// answering, the leader cannot extend, its Done closes by Until − loss
// margin, and Err reports ErrLockLost.
func TestLeadershipLostWhenAMajorityFails(t *testing.T) {
	fc := clock.NewFake(t0)
	servers := static.NewCluster(3, static.WithNow(fc.Now))
	c := testClient(t, fc, servers.KeyServers())
	l, err := c.Election("primary").Campaign(bg, 3*time.Second, "a")
	require.NoError(t, err)
	down := errors.New("paused")
	servers[0].Script(static.OpExtendLeader, static.Fail(down))
	servers[1].Script(static.OpExtendLeader, static.Fail(down))
	advanceTimersUntil(t, fc, 1, l.Done())
	assert.ErrorIs(t, l.Err(), ErrLockLost)
	assert.False(t, fc.Now().After(l.Until()), "lost by Until")
}

// TestLeaderNeedsAQuorum: Leader reports ErrNoLeader when no holder has a
// quorum, and another error when too few servers answer to tell.
func TestLeaderNeedsAQuorum(t *testing.T) {
	fc := clock.NewFake(t0)
	servers := static.NewCluster(3, static.WithNow(fc.Now))
	c := testClient(t, fc, servers.KeyServers())
	e := c.Election("primary")
	_, err := e.Leader(bg)
	require.ErrorIs(t, err, ErrNoLeader, "nobody campaigned")

	// A leader on one server only, as a campaigner cut off from the
	// others would leave behind.
	lead := keyserver.HoldSpec{Kind: keyserver.LeaderHold, Key: layout.ElectionKey("primary"), Token: "t", Value: "minority"}
	ok, _, err := servers[0].AcquireHold(bg, lead, time.Minute)
	require.True(t, ok)
	require.NoError(t, err)
	_, err = e.Leader(bg)
	require.ErrorIs(t, err, ErrNoLeader, "a leader on one server of three")

	servers[1].Script(static.OpReadLeader, static.Fail(errors.New("down")))
	servers[2].Script(static.OpReadLeader, static.Fail(errors.New("down")))
	_, err = e.Leader(bg)
	require.Error(t, err)
	assert.NotErrorIs(t, err, ErrNoLeader, "two of three servers down")
	var qe *QuorumError
	assert.ErrorAs(t, err, &qe)
}

// TestPrimitivesRefuseBadArguments: permits < 1, an empty name or value,
// and servers that lack the primitive's interface are ErrInvalidArgument
// before any server is asked.
func TestPrimitivesRefuseBadArguments(t *testing.T) {
	fc := clock.NewFake(t0)
	servers := static.NewCluster(3, static.WithNow(fc.Now))
	c := testClient(t, fc, servers.KeyServers())
	fn := func(context.Context) error { return nil }
	calls := map[string]func() error{
		"0 permits":             func() error { _, err := c.Semaphore("s", 0).Acquire(bg, time.Minute); return err },
		"-1 permits, Do":        func() error { return c.Semaphore("s", -1).Do(bg, time.Minute, fn) },
		"an empty semaphore":    func() error { _, err := c.Semaphore("", 1).TryAcquire(bg, time.Minute); return err },
		"an empty rwmutex":      func() error { _, err := c.RWMutex("").RLock(bg, time.Minute); return err },
		"an empty rwmutex, Do":  func() error { return c.RWMutex("").Do(bg, time.Minute, fn) },
		"an empty election":     func() error { _, err := c.Election("").Campaign(bg, time.Minute, "v"); return err },
		"an empty value":        func() error { _, err := c.Election("e").Campaign(bg, time.Minute, ""); return err },
		"Leader of an empty":    func() error { _, err := c.Election("").Leader(bg); return err },
		"a TTL under the drift": func() error { _, err := c.RWMutex("m").Lock(bg, time.Millisecond); return err },
	}
	for what, call := range calls {
		assert.ErrorIs(t, call(), ErrInvalidArgument, what)
	}
	_, open := <-c.Election("").Observe(bg)
	assert.False(t, open, "Observe of an empty election is closed at once")
	assert.Empty(t, servers[0].Calls(), "calls that reached a server")

	plain, err := New([]keyserver.KeyServer{lockOnly{servers[0]}}, withClock(fc))
	require.NoError(t, err)
	defer plain.Close()
	_, err = plain.Semaphore("s", 2).Acquire(bg, time.Minute)
	assert.ErrorIs(t, err, ErrInvalidArgument, "a semaphore over a server that is not a HoldKeeper")
	_, err = plain.RWMutex("m").Lock(bg, time.Minute)
	assert.ErrorIs(t, err, ErrInvalidArgument, "a read-write lock over a server that is not a HoldKeeper")
	_, err = plain.Election("e").Campaign(bg, time.Minute, "v")
	assert.ErrorIs(t, err, ErrInvalidArgument, "an election over a server that is not a HoldKeeper")

	unfenced, err := New([]keyserver.KeyServer{keeperOnly{servers[0]}}, withClock(fc))
	require.NoError(t, err)
	defer unfenced.Close()
	_, err = unfenced.Election("e").Campaign(bg, time.Minute, "v")
	assert.ErrorIs(t, err, ErrInvalidArgument, "an election over a HoldKeeper that is not a Fencer: its term is a fence")
	_, err = unfenced.Semaphore("s", 2).TryAcquire(bg, time.Minute)
	assert.NoError(t, err, "a semaphore over a HoldKeeper that is not a Fencer")
}

// lockOnly is a key server with none of the optional interfaces.
type lockOnly struct{ keyserver.KeyServer }

// keeperOnly is a HoldKeeper that is no Fencer.
type keeperOnly struct{ keyserver.HoldKeeper }

// TestPrimitivesKeepTheirOwnKeys: a lock, a semaphore, a read-write lock
// and an election of one name do not exclude each other.
func TestPrimitivesKeepTheirOwnKeys(t *testing.T) {
	fc := clock.NewFake(t0)
	c := testClient(t, fc, memoryServers(t, fc, 3))
	var held []*Lock
	take := func(what string, l *Lock, err error) {
		t.Helper()
		require.NoError(t, err, what)
		held = append(held, l)
	}
	l, err := c.TryAcquire(bg, "job", time.Minute)
	take("the lock", l, err)
	l, err = c.Semaphore("job", 1).TryAcquire(bg, time.Minute)
	take("the semaphore's only permit", l, err)
	l, err = c.RWMutex("job").TryLock(bg, time.Minute)
	take("the read-write lock, exclusively", l, err)
	l, err = c.Election("job").Campaign(bg, time.Minute, "me")
	take("the election", l, err)
	for _, l := range held {
		require.NoError(t, l.Release(bg))
	}
}

// TestCampaignRetryLimitIsACallOption: Campaign waits without a limit by
// default, and a call option can set one: WithRetryCount(0) fails at once
// with ErrHeldElsewhere while another leads.
func TestCampaignRetryLimitIsACallOption(t *testing.T) {
	fc := clock.NewFake(t0)
	c := testClient(t, fc, memoryServers(t, fc, 3))
	l, err := c.Election("primary").Campaign(bg, time.Minute, "a")
	require.NoError(t, err)
	_, err = c.Election("primary").Campaign(bg, time.Minute, "b", WithRetryCount(0))
	require.ErrorIs(t, err, ErrHeldElsewhere)

	ctx, cancel := context.WithCancel(bg)
	waiting := async(t, func() error { _, err := c.Election("primary").Campaign(ctx, time.Minute, "b"); return err })
	// Far past the default patience (10 retries of 200 ms), still waiting.
	for range 20 {
		ds, err := fc.BlockUntilSleepers(2, wait) // the leader's keep-alive and the campaigner
		require.NoError(t, err)
		fc.Advance(min(ds[0], time.Second))
	}
	cancel()
	require.ErrorIs(t, waiting(), context.Canceled, "a campaign without a limit ends with its ctx")
	require.NoError(t, l.Release(bg))
}

// TestCampaignWaitsWhileServersFail is what Client.Election's and
// Campaign's docs say: with the defaults, a Campaign against servers that
// always fail does not give up; it tries again at the retry delay until
// its ctx ends, and only a logger (WithLogger) tells that the servers fail,
// one warning each. WithRetryCount(n) bounds it.
func TestCampaignWaitsWhileServersFail(t *testing.T) {
	fc := clock.NewFake(t0)
	servers := static.NewCluster(3)
	down := errors.New("connection refused")
	for _, s := range servers {
		s.Script(static.OpAcquireLeader, static.Fail(down))
		s.Script(static.OpReleaseLeader, static.Fail(down))
	}
	var mu sync.Mutex
	var log strings.Builder
	c := testClient(t, fc, servers.KeyServers(), WithLogger(newTestLogger(&mu, &log)))
	e := c.Election("primary")

	ctx, stop := fc.WithTimeout(bg, 10*time.Minute)
	defer stop()
	done := make(chan struct{})
	got := async(t, func() error {
		defer close(done)
		_, err := e.Campaign(ctx, 10*time.Second, "host-a")
		return err
	})
	advanceTimersUntil(t, fc, 2, done) // ctx's timer and the call's
	err := got()
	require.ErrorIs(t, err, context.DeadlineExceeded, "it waited until its ctx ended")
	var qe *QuorumError
	require.ErrorAs(t, err, &qe)
	assert.Greater(t, qe.Attempts, 100, "trying all along")
	require.NotEmpty(t, qe.Failed)
	for _, se := range qe.Failed {
		assert.ErrorIs(t, se, down)
	}
	mu.Lock()
	for i := range servers {
		warned := strings.Count(log.String(), fmt.Sprintf(`level=WARN msg="redlock: key server failing" op=acquire lock=primary server=%d`, i))
		assert.Positive(t, warned, "a logger hears that server %d fails", i)
		assert.Less(t, warned, 3, "once (twice if another call answered meanwhile), not once per attempt")
	}
	mu.Unlock()

	// A retry count bounds it.
	done = make(chan struct{})
	got = async(t, func() error {
		defer close(done)
		_, err := e.Campaign(bg, 10*time.Second, "host-a", WithRetryCount(3))
		return err
	})
	advanceTimersUntil(t, fc, 1, done)
	require.ErrorIs(t, got(), ErrNotAcquired)
}
