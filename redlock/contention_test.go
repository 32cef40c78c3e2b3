package redlock

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goredlock/goredlock/internal/clock"
	"github.com/goredlock/goredlock/keyserver"
	"github.com/goredlock/goredlock/keyserver/static"
)

// lineLen returns how many calls wait in key's line of c.
func lineLen(c *Client, key string) int {
	q := c.lineFor(key)
	if q == nil {
		return 0
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.waiters)
}

// awaitLine waits, in real time, until key's line of c holds n calls.
func awaitLine(t *testing.T, c *Client, key string, n int) {
	t.Helper()
	deadline := time.Now().Add(wait)
	for lineLen(c, key) != n {
		if time.Now().After(deadline) {
			t.Fatalf("the line of %q holds %d calls, want %d", key, lineLen(c, key), n)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestLineHandsOverInOrder: calls of one client that wait for a lock get it
// in the order they came, each as soon as the one before releases it, not
// by the retry delay (a minute); only the front asks the servers, and
// every watch is stopped when the line empties.
func TestLineHandsOverInOrder(t *testing.T) {
	servers := static.NewCluster(3)
	c, err := New(servers.KeyServers(), WithRetryDelay(time.Minute))
	require.NoError(t, err)
	first, err := c.Acquire(bg, "job", time.Minute)
	require.NoError(t, err)

	const n = 8
	var (
		mu    sync.Mutex
		order []int
		wg    sync.WaitGroup
	)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			l, err := c.Acquire(bg, "job", time.Minute)
			if !assert.NoError(t, err) {
				return
			}
			mu.Lock()
			order = append(order, i)
			mu.Unlock()
			assert.NoError(t, l.Release(bg))
		}()
		awaitLine(t, c, "job", i+1)
	}
	// The first lock's attempt, then one refused attempt by the first
	// waiter; the others joined the line without asking.
	assert.Equal(t, 3*2, servers.Count(static.OpAcquire), "acquire calls before the release")
	require.NoError(t, first.Release(bg))
	wg.Wait()
	assert.Equal(t, []int{0, 1, 2, 3, 4, 5, 6, 7}, order, "the order of the grants")
	require.NoError(t, c.Close()) // the calls it left running have ended
	// One granted attempt per waiter, give or take an attempt that came to
	// a server before the previous holder's straggling release did.
	acquires := servers.Count(static.OpAcquire)
	assert.GreaterOrEqual(t, acquires, 3*(2+n))
	assert.LessOrEqual(t, acquires, 3*(2+n+2), "acquire calls: waiters asked the servers while others held the lock")
	assert.Equal(t, 0, lineLen(c, "job"))
	for i, s := range servers {
		assert.Zero(t, s.Watching("job"), "server %d: a watch outlived the line", i)
	}
}

// TestLineWaitersSpendTheirRetries: a call waiting behind the front counts
// the front's refused attempts against its own retries, and gives up when
// they are used up, without asking the servers itself.
func TestLineWaitersSpendTheirRetries(t *testing.T) {
	servers := static.NewCluster(3)
	for _, s := range servers {
		s.Script(static.OpAcquire, static.Deny)
	}
	c, err := New(servers.KeyServers(), WithRetryDelay(2*time.Millisecond), WithRetryCount(-1))
	require.NoError(t, err)
	defer c.Close()
	ctx, cancel := context.WithCancel(bg)
	front := make(chan error, 1)
	go func() {
		_, err := c.Acquire(ctx, "job", time.Minute)
		front <- err
	}()
	awaitLine(t, c, "job", 1)
	before := servers.Count(static.OpAcquire)
	_, err = c.Acquire(bg, "job", time.Minute, WithRetryCount(3))
	require.ErrorIs(t, err, ErrHeldElsewhere)
	var qe *QuorumError
	require.ErrorAs(t, err, &qe)
	assert.Equal(t, 4, qe.Attempts, "attempts: the front's, made while the call waited")
	assert.LessOrEqual(t, servers.Count(static.OpAcquire)-before, 3*5, "the waiter asked the servers itself")
	cancel()
	require.ErrorIs(t, <-front, context.Canceled)
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
			servers[i].Script(static.OpAcquire, static.Reply{Rank: keyserver.CallerFirst, Left: time.Minute, Delay: 20 * time.Millisecond}, static.Grant)
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
			servers[i].Script(static.OpAcquire, static.Reply{Rank: keyserver.HolderFirst, Left: time.Minute, Delay: 20 * time.Millisecond})
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
		servers[2].Script(static.OpAcquire, static.Reply{Rank: keyserver.CallerFirst, Delay: 20 * time.Millisecond})
		servers[3].Script(static.OpAcquire, static.Reply{Rank: keyserver.CallerFirst, Delay: 20 * time.Millisecond})
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

// awaitCalls waits, in real time, until every call the servers received
// has been answered.
func awaitCalls(t *testing.T, servers static.Cluster) {
	t.Helper()
	deadline := time.Now().Add(wait)
	for _, s := range servers {
		for {
			done := true
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
	awaitCalls(t, servers) // the holder's call to the third server too
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
