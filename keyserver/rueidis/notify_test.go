package rueidis_test

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goredlock/goredlock/internal/redisscript"
	"github.com/goredlock/goredlock/internal/redistest"
	"github.com/goredlock/goredlock/keyserver"
	rueidisks "github.com/goredlock/goredlock/keyserver/rueidis"
)

// Tests of keyserver.Notifier on real Redis; the conformance suite covers
// the contract over a single node, a Cluster and Sentinel.

// named returns a Server over a client of its own whose connections are
// named name in CLIENT LIST.
func named(t *testing.T, addr, name string) *rueidisks.Server {
	return newServer(t, newClient(t, addr, func(o *rueidis.ClientOption) { o.ClientName = name }))
}

// subscribers returns the subscription counts of the connections named
// name that are subscribed to a channel.
func subscribers(t *testing.T, addr, name string) []int {
	t.Helper()
	var subs []int
	for _, line := range strings.Split(strings.TrimSpace(fmt.Sprint(do(t, addr, "CLIENT", "LIST"))), "\n") {
		fields := map[string]string{}
		for _, f := range strings.Fields(line) {
			k, v, _ := strings.Cut(f, "=")
			fields[k] = v
		}
		if n, _ := strconv.Atoi(fields["sub"]); fields["name"] == name && n > 0 {
			subs = append(subs, n)
		}
	}
	return subs
}

// channels returns the channels with a subscriber, sorted.
func channels(t *testing.T, addr string) []string {
	t.Helper()
	var chans []string
	for _, c := range do(t, addr, "PUBSUB", "CHANNELS").([]any) {
		chans = append(chans, c.(string))
	}
	slices.Sort(chans)
	return chans
}

func numsub(t *testing.T, addr, channel string) int64 {
	t.Helper()
	return do(t, addr, "PUBSUB", "NUMSUB", channel).([]any)[1].(int64)
}

func isClosed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

func awaitClosed(t *testing.T, c <-chan struct{}, d time.Duration, what string) {
	t.Helper()
	select {
	case <-c:
	case <-time.After(d):
		t.Fatalf("%s: not woken within %v", what, d)
	}
}

// TestReleaseWakesWaiterWithinMilliseconds measures the time from a
// holder's Release to the wake of a waiter that another Server started
// watching after its refusal.
func TestReleaseWakesWaiterWithinMilliseconds(t *testing.T) {
	addr := redistest.Start(t, 1).Nodes[0].Addr()
	holder, waiter := named(t, addr, "holder"), named(t, addr, "waiter")
	const rounds = 200
	took := make([]time.Duration, 0, rounds)
	for i := 0; i < rounds; i++ {
		key := "wake/" + strconv.Itoa(i%7) // some keys reused, some channels subscribed anew
		ok, err := holder.Acquire(bg, key, "h", time.Minute)
		require.NoError(t, err)
		require.True(t, ok)
		ok, left, err := leftOf(waiter.AcquireOrHolder(bg, key, "w", time.Minute))
		require.NoError(t, err)
		require.False(t, ok)
		require.Greater(t, left, 50*time.Second)
		ctx, cancel := context.WithTimeout(bg, 5*time.Second)
		released, stop, err := waiter.Watch(ctx, key)
		cancel()
		require.NoError(t, err)
		start := time.Now()
		ok, err = holder.Release(bg, key, "h")
		require.NoError(t, err)
		require.True(t, ok)
		awaitClosed(t, released, 5*time.Second, "waiter")
		took = append(took, time.Since(start))
		stop()
	}
	slices.Sort(took)
	p50, p99 := took[rounds/2], took[rounds*99/100]
	t.Logf("release → wake over %d releases: p50 %v, p99 %v, max %v", rounds, p50, p99, took[rounds-1])
	// A few milliseconds on loopback; the bound leaves room for a shared
	// machine under the race detector.
	assert.Less(t, p99, 50*time.Millisecond, "p99 of release → wake")
	assert.Equal(t, int64(1), rueidisks.SubscriberConnections(waiter), "one connection for every round")
}

// TestWatchIsPerKey: a waiter is woken by its own key's release only, also
// when another key shares its channel ("{job}" and "job" both publish on
// "{job}:released").
func TestWatchIsPerKey(t *testing.T) {
	addr := redistest.Start(t, 1).Nodes[0].Addr()
	s := newServer(t, newClient(t, addr))
	require.Equal(t, redisscript.ReleaseChannel("job"), redisscript.ReleaseChannel("{job}"), "the keys share a channel")
	keys := []string{"job", "{job}", "job:2", "{job}:2"}
	watches := map[string]<-chan struct{}{}
	for _, k := range keys {
		ok, err := s.Acquire(bg, k, "t", time.Minute)
		require.NoError(t, err)
		require.True(t, ok)
		released, stop, err := s.Watch(bg, k)
		require.NoError(t, err)
		defer stop()
		watches[k] = released
	}
	for i, k := range keys {
		ok, err := s.Release(bg, k, "t")
		require.NoError(t, err)
		require.True(t, ok)
		awaitClosed(t, watches[k], 5*time.Second, k)
		for _, later := range keys[i+1:] {
			assert.False(t, isClosed(watches[later]), "%s woken by the release of %s", later, k)
		}
	}
}

// TestAcquireOrHolderReportsTheHoldersTTL: the holder's PTTL, whoever wrote
// the key, and 0 for a key without a TTL.
func TestAcquireOrHolderReportsTheHoldersTTL(t *testing.T) {
	addr := redistest.Start(t, 1).Nodes[0].Addr()
	s := newServer(t, newClient(t, addr))
	do(t, addr, "SET", "other-library", "their-token", "PX", "7000", "NX")
	ok, left, err := leftOf(s.AcquireOrHolder(bg, "other-library", "ours", time.Minute))
	require.NoError(t, err)
	assert.False(t, ok)
	assert.InDelta(t, 7000, left.Milliseconds(), 500, "left %v", left)

	do(t, addr, "SET", "forever", "x")
	ok, left, err = leftOf(s.AcquireOrHolder(bg, "forever", "ours", time.Minute))
	require.NoError(t, err)
	assert.False(t, ok)
	assert.Zero(t, left, "a key without a TTL")

	ok, left, err = leftOf(s.AcquireOrHolder(bg, "free", "ours", 90*time.Second))
	require.NoError(t, err)
	assert.True(t, ok)
	assert.Zero(t, left)
	assert.InDelta(t, 90_000, do(t, addr, "PTTL", "free"), 1000, "the TTL is set as Acquire sets it")

	do(t, addr, "RPUSH", "jobs", "x")
	_, _, err = leftOf(s.AcquireOrHolder(bg, "jobs", "ours", time.Minute))
	require.ErrorIs(t, err, keyserver.ErrPermanent, "a key of another type")
}

// TestManyWaitersShareOneSubscriberConnection: 200 waiters on 50 names
// make one subscriber connection with 50 channels and two goroutines, and
// a channel is unsubscribed when its last waiter stops.
func TestManyWaitersShareOneSubscriberConnection(t *testing.T) {
	addr := redistest.Start(t, 1).Nodes[0].Addr()
	s := named(t, addr, "share")
	const names, perName = 50, 4
	goroutines := runtime.NumGoroutine()
	type waiter struct {
		key      string
		released <-chan struct{}
		stop     func()
	}
	var (
		mu      sync.Mutex
		waiters []waiter
		wg      sync.WaitGroup
	)
	for i := 0; i < names*perName; i++ {
		wg.Add(1)
		go func(key string) { // at once: they share subscriptions being set up
			defer wg.Done()
			released, stop, err := s.Watch(bg, key)
			if !assert.NoError(t, err) {
				return
			}
			mu.Lock()
			waiters = append(waiters, waiter{key, released, stop})
			mu.Unlock()
		}("share/" + strconv.Itoa(i%names))
	}
	wg.Wait()
	require.Len(t, waiters, names*perName)
	// The writer and rueidis's own of the dedicated connection are the
	// goroutines left once the callers' have exited (wg.Wait returns as
	// they finish, not after): a few, not one per waiter.
	extra := runtime.NumGoroutine() - goroutines
	for end := time.Now().Add(5 * time.Second); extra > 5 && time.Now().Before(end); extra = runtime.NumGoroutine() - goroutines {
		time.Sleep(time.Millisecond)
	}
	assert.LessOrEqual(t, extra, 5, "goroutines more than before the %d waiters", names*perName)
	assert.Equal(t, []int{names}, subscribers(t, addr, "share"), "one subscriber connection, one channel per name")
	assert.Equal(t, int64(1), rueidisks.SubscriberConnections(s))
	for i := 0; i < names; i += 10 {
		assert.Equal(t, int64(1), numsub(t, addr, redisscript.ReleaseChannel("share/"+strconv.Itoa(i))), "subscribers of name %d", i)
	}

	// Stop all but one waiter of share/0, and every waiter of the names
	// from 25 on: those channels go, share/0's stays.
	kept := false
	for _, w := range waiters {
		n, _ := strconv.Atoi(strings.TrimPrefix(w.key, "share/"))
		if n == 0 && !kept {
			kept = true
			continue
		}
		if n == 0 || n >= 25 {
			w.stop()
		}
	}
	want := make([]string, 0, 25)
	for i := 0; i < 25; i++ {
		want = append(want, redisscript.ReleaseChannel("share/"+strconv.Itoa(i)))
	}
	slices.Sort(want)
	require.Eventually(t, func() bool { return slices.Equal(channels(t, addr), want) }, 5*time.Second, 5*time.Millisecond,
		"channels left: %v", channels(t, addr))
	assert.Equal(t, int64(1), numsub(t, addr, redisscript.ReleaseChannel("share/0")), "share/0 has a waiter left")

	for _, w := range waiters {
		w.stop() // the rest; a second stop of the others is harmless
		assert.False(t, isClosed(w.released), "%s woken with no release", w.key)
	}
	require.Eventually(t, func() bool { return len(channels(t, addr)) == 0 }, 5*time.Second, 5*time.Millisecond,
		"channels left once every waiter stopped: %v", channels(t, addr))
	assert.Zero(t, numsub(t, addr, redisscript.ReleaseChannel("share/0")))

	// The connection stays open for the next waiter.
	released, stop, err := s.Watch(bg, "share/1")
	require.NoError(t, err)
	defer stop()
	assert.False(t, isClosed(released))
	assert.Equal(t, int64(1), rueidisks.SubscriberConnections(s))
}

// TestSubscriberSurvivesRestart: a Redis restart wakes every waiter, and
// the next Watch opens a new connection that works.
func TestSubscriberSurvivesRestart(t *testing.T) {
	node := redistest.Start(t, 1).Nodes[0]
	s, other := named(t, node.Addr(), "restart"), named(t, node.Addr(), "other")
	var woken []<-chan struct{}
	for i := 0; i < 20; i++ {
		released, stop, err := s.Watch(bg, "restart/"+strconv.Itoa(i%5))
		require.NoError(t, err)
		defer stop()
		woken = append(woken, released)
	}
	node.Restart()
	for i, released := range woken {
		awaitClosed(t, released, 5*time.Second, fmt.Sprintf("waiter %d after the restart", i))
	}

	var released <-chan struct{}
	require.Eventually(t, func() bool {
		r, stop, err := s.Watch(bg, "restart/0")
		if err == nil {
			t.Cleanup(stop)
			released = r
		}
		return err == nil
	}, 5*time.Second, 10*time.Millisecond)
	assert.Equal(t, int64(2), rueidisks.SubscriberConnections(s))
	assert.Equal(t, []int{1}, subscribers(t, node.Addr(), "restart"), "one subscriber connection")
	require.Eventually(t, func() bool {
		ok, err := other.Acquire(bg, "restart/0", "t", time.Minute)
		return err == nil && ok
	}, 5*time.Second, 10*time.Millisecond)
	assert.False(t, isClosed(released))
	// The other client's own connection may still be settling after the
	// restart (rueidis can answer EOF once); a release is idempotent.
	require.Eventually(t, func() bool {
		_, err := other.Release(bg, "restart/0", "t")
		return err == nil
	}, 5*time.Second, 10*time.Millisecond)
	awaitClosed(t, released, 5*time.Second, "a waiter on the new connection")
}

// TestKilledSubscriberWakesWaiters: a subscriber connection killed by the
// server (CLIENT KILL, a proxy's idle timeout) wakes its waiters at once,
// and the next Watch works.
func TestKilledSubscriberWakesWaiters(t *testing.T) {
	addr := redistest.Start(t, 1).Nodes[0].Addr()
	s := named(t, addr, "killed")
	released, stop, err := s.Watch(bg, "killed")
	require.NoError(t, err)
	defer stop()
	do(t, addr, "CLIENT", "KILL", "TYPE", "pubsub")
	awaitClosed(t, released, 5*time.Second, "the waiter of a killed connection")
	require.Eventually(t, func() bool { return len(subscribers(t, addr, "killed")) == 0 }, 5*time.Second, 5*time.Millisecond,
		"nothing is left subscribed")

	again, stop2, err := s.Watch(bg, "killed")
	require.NoError(t, err)
	defer stop2()
	ok, err := s.Acquire(bg, "killed", "t", time.Minute)
	require.NoError(t, err)
	require.True(t, ok)
	ok, err = s.Release(bg, "killed", "t")
	require.NoError(t, err)
	require.True(t, ok)
	awaitClosed(t, again, 5*time.Second, "a waiter on the new connection")
}

// TestCloseWakesWaitersAndWaitsForTheGoroutines: Close wakes every waiter
// and returns once the writer has (goleak checks that no goroutine is
// left); later Watch calls fail with ErrClosed, and the connection is
// closed.
func TestCloseWakesWaitersAndWaitsForTheGoroutines(t *testing.T) {
	addr := redistest.Start(t, 1).Nodes[0].Addr()
	s := rueidisks.New(newClient(t, addr, func(o *rueidis.ClientOption) { o.ClientName = "close" }))
	released, stop, err := s.Watch(bg, "close")
	require.NoError(t, err)
	defer stop()
	require.NoError(t, s.Close())
	assert.True(t, isClosed(released), "Close wakes the waiters")
	_, _, err = s.Watch(bg, "close")
	require.ErrorIs(t, err, rueidisks.ErrClosed)
	require.NoError(t, s.Close(), "a second Close")
	require.Eventually(t, func() bool { return len(subscribers(t, addr, "close")) == 0 }, 5*time.Second, 5*time.Millisecond)
}

// TestWatchWithEndedContextSubscribesNothing: a Watch whose context ends
// while it waits for the confirmation leaves no subscription behind.
func TestWatchWithEndedContextSubscribesNothing(t *testing.T) {
	node := redistest.Start(t, 1).Nodes[0]
	s := newServer(t, newClient(t, node.Addr()))
	_, stop, err := s.Watch(bg, "warm") // the connection is open
	require.NoError(t, err)
	stop()
	node.Pause()
	ctx, cancel := context.WithTimeout(bg, 100*time.Millisecond)
	defer cancel()
	_, _, err = s.Watch(ctx, "paused")
	require.ErrorIs(t, err, context.DeadlineExceeded)
	node.Resume()
	require.Eventually(t, func() bool { return len(channels(t, node.Addr())) == 0 }, 5*time.Second, 5*time.Millisecond,
		"channels left: %v", channels(t, node.Addr()))
}

// TestCloseDoesNotWaitForAPausedServer: Close wakes the waiters and
// returns promptly while the server answers nothing (rueidis gives a
// closing connection one second to answer a PING).
func TestCloseDoesNotWaitForAPausedServer(t *testing.T) {
	node := redistest.Start(t, 1).Nodes[0]
	s := newServer(t, newClient(t, node.Addr()))
	released, stop, err := s.Watch(bg, "paused-close")
	require.NoError(t, err)
	defer stop()
	node.Pause()
	defer node.Resume()
	start := time.Now()
	require.NoError(t, s.Close())
	assert.Less(t, time.Since(start), 2*time.Second, "Close waited on the server")
	assert.True(t, isClosed(released), "Close wakes the waiters")
}

// leftOf keeps of AcquireOrHolder's holder only its TTL.
func leftOf(ok bool, h keyserver.Holder, err error) (bool, time.Duration, error) {
	return ok, h.Left, err
}
