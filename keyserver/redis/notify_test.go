package redis_test

import (
	"context"
	"fmt"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	redigo "github.com/gomodule/redigo/redis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goredlock/goredlock/internal/redisscript"
	"github.com/goredlock/goredlock/internal/redistest"
	"github.com/goredlock/goredlock/keyserver"
	"github.com/goredlock/goredlock/keyserver/redis"
)

// Tests of keyserver.Notifier on real Redis; the conformance suite covers
// the contract in every mode.

// mode makes a Server in one of the three ways a program can: pipelined
// (FromURL's default), pooled by FromURL, or over the caller's pool. Its
// connections are named name in CLIENT LIST.
type mode struct {
	name string
	new  func(t *testing.T, node *redistest.Node, name string) *redis.Server
}

var modes = []mode{
	{"pipelined", func(t *testing.T, node *redistest.Node, name string) *redis.Server {
		return fromURL(t, node.URL("")+"?client_name="+name)
	}},
	{"pooled", func(t *testing.T, node *redistest.Node, name string) *redis.Server {
		return fromURL(t, node.URL("")+"?client_name="+name, redis.WithPooledConnections())
	}},
	{"callers-pool", func(t *testing.T, node *redistest.Node, name string) *redis.Server {
		pool := callersPool(t, node, name)
		s := redis.New(pool, redis.WithName(node.Addr()))
		t.Cleanup(func() { s.Close() }) // before the pool's Close: cleanups run last first
		return s
	}},
}

// callersPool returns a redigo pool of the caller's own, closed when the
// test ends.
func callersPool(t *testing.T, node *redistest.Node, name string) *redigo.Pool {
	pool := &redigo.Pool{DialContext: func(ctx context.Context) (redigo.Conn, error) {
		return redigo.DialContext(ctx, "tcp", node.Addr(), redigo.DialClientName(name))
	}}
	t.Cleanup(func() { pool.Close() })
	return pool
}

// clients returns the CLIENT LIST entries of the connections named name,
// each as a map of its fields.
func clients(t *testing.T, node *redistest.Node, name string) []map[string]string {
	t.Helper()
	list, err := redigo.String(do(t, node, "CLIENT", "LIST"), nil)
	require.NoError(t, err)
	var found []map[string]string
	for _, line := range strings.Split(strings.TrimSpace(list), "\n") {
		fields := map[string]string{}
		for _, f := range strings.Fields(line) {
			k, v, _ := strings.Cut(f, "=")
			fields[k] = v
		}
		if fields["name"] == name {
			found = append(found, fields)
		}
	}
	return found
}

// subscribers returns the subscription counts of the connections named
// name that are subscribed to a channel.
func subscribers(t *testing.T, node *redistest.Node, name string) []int {
	t.Helper()
	var subs []int
	for _, c := range clients(t, node, name) {
		if n, _ := strconv.Atoi(c["sub"]); n > 0 {
			subs = append(subs, n)
		}
	}
	return subs
}

// channels returns the channels with a subscriber, sorted.
func channels(t *testing.T, node *redistest.Node) []string {
	t.Helper()
	chans, err := redigo.Strings(do(t, node, "PUBSUB", "CHANNELS"), nil)
	require.NoError(t, err)
	slices.Sort(chans)
	return chans
}

func isClosed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// awaitClosed fails the test unless c is closed within d.
func awaitClosed(t *testing.T, c <-chan struct{}, d time.Duration, what string) {
	t.Helper()
	select {
	case <-c:
	case <-time.After(d):
		t.Fatalf("%s: not woken within %v", what, d)
	}
}

// TestReleaseWakesWaiterWithinMilliseconds measures, over a few hundred
// rounds, the time from a holder's Release to the wake of a waiter that
// another client (another Server) had started watching after its refusal.
func TestReleaseWakesWaiterWithinMilliseconds(t *testing.T) {
	node := redistest.Start(t, 1).Nodes[0]
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			holder, waiter := m.new(t, node, "holder"), m.new(t, node, "waiter")
			const rounds = 300
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
			p50, p99, worst := took[rounds/2], took[rounds*99/100], took[rounds-1]
			t.Logf("release → wake over %d releases: p50 %v, p99 %v, max %v", rounds, p50, p99, worst)
			// A few milliseconds on loopback; the bound leaves room for a
			// shared machine under the race detector.
			assert.Less(t, p99, 50*time.Millisecond, "p99 of release → wake")
		})
	}
}

// TestWatchIsPerKey: a waiter is woken by its own key's release only, also
// when another key shares its channel ("{job}" and "job" both publish on
// "{job}:released") or its name differs only in a hash tag.
func TestWatchIsPerKey(t *testing.T) {
	node := redistest.Start(t, 1).Nodes[0]
	s := fromURL(t, node.URL(""))
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

// TestReleaseChannelRuleIsTheScripts checks that the Del script publishes
// on ReleaseChannel(key), with the key as the message, for keys with and
// without hash tags, through a plain subscriber of our own.
func TestReleaseChannelRuleIsTheScripts(t *testing.T) {
	node := redistest.Start(t, 1).Nodes[0]
	s := fromURL(t, node.URL(""))
	sub, err := redigo.Dial("tcp", node.Addr())
	require.NoError(t, err)
	defer sub.Close()
	psc := redigo.PubSubConn{Conn: sub}
	for _, key := range []string{"job", "{job}:7", "a{b}c", "{}job", "a}b{", "{a}{b}", "{{a}}", "job:{}{x}", "ünï{cødé}"} {
		ch := redisscript.ReleaseChannel(key)
		require.NoError(t, psc.Subscribe(ch))
		require.IsType(t, redigo.Subscription{}, psc.Receive())
		ok, err := s.Acquire(bg, key, "t", time.Minute)
		require.NoError(t, err)
		require.True(t, ok)
		ok, err = s.Release(bg, key, "t")
		require.NoError(t, err)
		require.True(t, ok)
		msg, isMsg := psc.ReceiveWithTimeout(5 * time.Second).(redigo.Message)
		require.True(t, isMsg, "key %q: no message on %q", key, ch)
		assert.Equal(t, ch, msg.Channel, key)
		assert.Equal(t, key, string(msg.Data), key)
		require.NoError(t, psc.Unsubscribe(ch))
		require.IsType(t, redigo.Subscription{}, psc.Receive())
	}
}

// TestAcquireOrHolderReportsTheHoldersTTL: the holder's PTTL, whoever wrote
// the key (another library's plain SET NX PX too), and 0 for a key without
// a TTL.
func TestAcquireOrHolderReportsTheHoldersTTL(t *testing.T) {
	node := redistest.Start(t, 1).Nodes[0]
	s := fromURL(t, node.URL(""))
	do(t, node, "SET", "other-library", "their-token", "PX", 7000, "NX")
	ok, left, err := leftOf(s.AcquireOrHolder(bg, "other-library", "ours", time.Minute))
	require.NoError(t, err)
	assert.False(t, ok)
	assert.InDelta(t, 7000, left.Milliseconds(), 500, "left %v", left)

	do(t, node, "SET", "forever", "x")
	ok, left, err = leftOf(s.AcquireOrHolder(bg, "forever", "ours", time.Minute))
	require.NoError(t, err)
	assert.False(t, ok)
	assert.Zero(t, left, "a key without a TTL")

	ok, left, err = leftOf(s.AcquireOrHolder(bg, "free", "ours", 90*time.Second))
	require.NoError(t, err)
	assert.True(t, ok)
	assert.Zero(t, left)
	assert.InDelta(t, 90_000, do(t, node, "PTTL", "free"), 1000, "the TTL is set as Acquire sets it")

	do(t, node, "RPUSH", "jobs", "x")
	_, _, err = leftOf(s.AcquireOrHolder(bg, "jobs", "ours", time.Minute))
	require.ErrorIs(t, err, keyserver.ErrPermanent, "a key of another type")
}

// TestManyWaitersShareOneSubscriberConnection: 200 waiters on 50 names
// make one subscriber connection with 50 channels, no goroutine each, and
// a channel is unsubscribed when its last waiter stops.
func TestManyWaitersShareOneSubscriberConnection(t *testing.T) {
	node := redistest.Start(t, 1).Nodes[0]
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			name := "share-" + m.name
			s := m.new(t, node, name)
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
			// The reader is the one goroutine left once the callers' have
			// exited (wg.Wait returns as they finish, not after). Polled
			// here: assert.Eventually runs its condition on a goroutine.
			extra := runtime.NumGoroutine() - goroutines
			for end := time.Now().Add(5 * time.Second); extra > 1 && time.Now().Before(end); extra = runtime.NumGoroutine() - goroutines {
				time.Sleep(time.Millisecond)
			}
			assert.LessOrEqual(t, extra, 1, "goroutines more than before the %d waiters", names*perName)
			assert.Equal(t, []int{names}, subscribers(t, node, name), "one subscriber connection, one channel per name")
			assert.Equal(t, int64(1), redis.SubscriberDials(s))
			for i := 0; i < names; i += 10 {
				n, err := redigo.Values(do(t, node, "PUBSUB", "NUMSUB", redisscript.ReleaseChannel("share/"+strconv.Itoa(i))), nil)
				require.NoError(t, err)
				assert.Equal(t, int64(1), n[1], "subscribers of name %d", i)
			}

			// Stop all but one waiter of share/0, and every waiter of the
			// names from 25 on: those channels go, share/0's stays.
			kept := 0
			for _, w := range waiters {
				n, _ := strconv.Atoi(strings.TrimPrefix(w.key, "share/"))
				if n == 0 && kept == 0 {
					kept++
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
			require.Eventually(t, func() bool { return slices.Equal(channels(t, node), want) }, 5*time.Second, 5*time.Millisecond,
				"channels left: %v", channels(t, node))

			for _, w := range waiters {
				w.stop() // the rest; a second stop of the others is harmless
				assert.False(t, isClosed(w.released), "%s woken with no release", w.key)
			}
			require.Eventually(t, func() bool { return len(channels(t, node)) == 0 }, 5*time.Second, 5*time.Millisecond,
				"channels left once every waiter stopped: %v", channels(t, node))
			assert.Len(t, clients(t, node, name), 1,
				"the subscriber connection stays open for the next waiter, and no other was opened")
		})
	}
}

// TestSubscriberSurvivesRestart: a Redis restart wakes every waiter, and
// the next Watch opens a new subscriber connection that works.
func TestSubscriberSurvivesRestart(t *testing.T) {
	node := redistest.Start(t, 1).Nodes[0]
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			s, other := m.new(t, node, "restart"), m.new(t, node, "other")
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

			// A new watch on a new connection; pooled connections broken by
			// the restart are replaced as calls find them.
			var released <-chan struct{}
			require.Eventually(t, func() bool {
				var stop func()
				var err error
				released, stop, err = s.Watch(bg, "restart/0")
				if err == nil {
					t.Cleanup(stop)
				}
				return err == nil
			}, 5*time.Second, 10*time.Millisecond)
			assert.Equal(t, int64(2), redis.SubscriberDials(s))
			assert.Equal(t, []int{1}, subscribers(t, node, "restart"))
			require.Eventually(t, func() bool {
				ok, err := other.Acquire(bg, "restart/0", "t", time.Minute)
				return err == nil && ok
			}, 5*time.Second, 10*time.Millisecond)
			assert.False(t, isClosed(released))
			ok, err := other.Release(bg, "restart/0", "t")
			require.NoError(t, err)
			require.True(t, ok)
			awaitClosed(t, released, 5*time.Second, "a waiter on the new connection")
		})
	}
}

// TestCloseWakesWaitersAndWaitsForTheReader: Close wakes every waiter and
// returns once the reader has (goleak checks that no goroutine is left),
// also when the server does not answer; later Watch calls fail with
// ErrClosed, and a caller's pool gets its connection back.
func TestCloseWakesWaitersAndWaitsForTheReader(t *testing.T) {
	node := redistest.Start(t, 1).Nodes[0]
	for _, paused := range []bool{false, true} {
		for _, m := range modes {
			t.Run(fmt.Sprintf("%s/paused=%v", m.name, paused), func(t *testing.T) {
				var (
					s    *redis.Server
					pool *redigo.Pool
				)
				if m.name == "callers-pool" {
					pool = callersPool(t, node, "close")
					s = redis.New(pool)
				} else {
					s = m.new(t, node, "close")
				}
				released, stop, err := s.Watch(bg, "close")
				require.NoError(t, err)
				defer stop()
				if paused {
					node.Pause()
					defer node.Resume()
				}
				start := time.Now()
				require.NoError(t, s.Close())
				assert.Less(t, time.Since(start), time.Second, "Close waited on the server")
				assert.True(t, isClosed(released), "Close wakes the waiters")
				_, _, err = s.Watch(bg, "close")
				require.ErrorIs(t, err, redis.ErrClosed)
				require.NoError(t, s.Close(), "a second Close")
				if pool != nil {
					assert.Equal(t, 0, pool.ActiveCount()-pool.IdleCount(), "the subscriber's connection went back to the pool")
					if !paused {
						ok, err := s.Acquire(bg, "close", "t", time.Second)
						require.NoError(t, err, "the caller's pool stays usable")
						assert.True(t, ok)
					}
				}
			})
		}
	}
}

// TestSilentSubscriberIsReplaced: a subscriber connection that leaves a
// request unanswered past its deadline plus the overdue limit is closed by
// the next Watch, which wakes its waiters; a connection silent for a while
// is pinged by a Watch, so a dead link is found even when every channel is
// already subscribed.
func TestSilentSubscriberIsReplaced(t *testing.T) {
	node := redistest.Start(t, 1).Nodes[0]
	const limit = 100 * time.Millisecond
	short := func() (context.Context, context.CancelFunc) { return context.WithTimeout(bg, 100*time.Millisecond) }

	t.Run("unanswered subscribe", func(t *testing.T) {
		s := fromURL(t, node.URL(""))
		redis.SetOverdueLimit(s, limit)
		a, stop, err := s.Watch(bg, "a")
		require.NoError(t, err)
		defer stop()
		node.Pause()
		ctx, cancel := short()
		_, _, err = s.Watch(ctx, "b")
		cancel()
		require.ErrorIs(t, err, context.DeadlineExceeded, "no confirmation from a paused server")
		assert.False(t, isClosed(a), "not given up on yet")
		time.Sleep(limit + 50*time.Millisecond)
		ctx, cancel = short()
		_, _, err = s.Watch(ctx, "c")
		cancel()
		require.Error(t, err, "the server is still paused")
		assert.True(t, isClosed(a), "the overdue connection was closed, and its waiters woken")
		node.Resume()
		_, stop, err = s.Watch(bg, "d")
		require.NoError(t, err)
		stop()
		assert.GreaterOrEqual(t, redis.SubscriberDials(s), int64(2))
	})

	t.Run("silent link", func(t *testing.T) {
		s := fromURL(t, node.URL(""))
		redis.SetOverdueLimit(s, limit)
		redis.SetPingAfter(s, 20*time.Millisecond)
		a, stopA, err := s.Watch(bg, "a")
		require.NoError(t, err)
		defer stopA()
		node.Pause()
		time.Sleep(50 * time.Millisecond)
		_, stop, err := s.Watch(bg, "a") // subscribed already: no wait, but a PING goes out
		require.NoError(t, err)
		stop()
		assert.False(t, isClosed(a))
		time.Sleep(limit + 50*time.Millisecond)
		ctx, cancel := short()
		_, _, err = s.Watch(ctx, "a") // finds the PING overdue
		cancel()
		require.Error(t, err, "the server is still paused")
		assert.True(t, isClosed(a), "the silent connection was closed, and its waiters woken")
		node.Resume()
	})
}

// TestPublishDeniedStillReleases: a user whom an ACL denies Pub/Sub
// releases as before (its waiters wake by TTL), and its Watch fails with a
// permanent error instead of waiting.
func TestPublishDeniedStillReleases(t *testing.T) {
	node := redistest.Start(t, 1).Nodes[0]
	do(t, node, "ACL", "SETUSER", "locker", "on", ">pw", "~*", "+@all", "resetchannels")
	u := regexp.MustCompile(`^redis://`).ReplaceAllString(node.URL(""), "redis://locker:pw@")
	s := fromURL(t, u)
	ok, err := s.Acquire(bg, "k", "t", time.Minute)
	require.NoError(t, err)
	require.True(t, ok)
	ok, err = s.Release(bg, "k", "t")
	require.NoError(t, err, "PUBLISH denied must not fail the release")
	assert.True(t, ok)
	assert.Nil(t, do(t, node, "GET", "k"))

	_, _, err = s.Watch(bg, "k")
	require.ErrorIs(t, err, keyserver.ErrPermanent)
	assert.Contains(t, err.Error(), "NOPERM")
	_, stop, err := s.Watch(bg, "k")
	require.ErrorIs(t, err, keyserver.ErrPermanent, "and again: the refused subscription left nothing behind")
	assert.Nil(t, stop)
}

// TestWatchOverTLSWithPassword: the subscriber is dialed as the other
// connections are, with the URL's TLS, password and database.
func TestWatchOverTLSWithPassword(t *testing.T) {
	c := redistest.Start(t, 1, redistest.WithTLS(), redistest.WithPassword("s3cret"))
	for _, m := range []redis.Option{redis.WithName("pipelined"), redis.WithPooledConnections()} {
		s := fromURL(t, c.Nodes[0].URL("s3cret")+"/3", m, redis.WithDialOptions(redigo.DialTLSConfig(c.TLSConfig())))
		ok, err := s.Acquire(bg, "tls", "t", time.Minute)
		require.NoError(t, err)
		require.True(t, ok)
		released, stop, err := s.Watch(bg, "tls")
		require.NoError(t, err)
		ok, err = s.Release(bg, "tls", "t")
		require.NoError(t, err)
		require.True(t, ok)
		awaitClosed(t, released, 5*time.Second, "waiter over TLS")
		stop()
	}
}

// TestStuckWriteHoldsUpOnlyItsWriter floods a paused server with long
// subscriptions until the socket buffers are full and a write blocks: the
// other Watch calls still end at their deadline (they queue behind the
// writer without waiting for it), and Close unblocks the writer at once.
func TestStuckWriteHoldsUpOnlyItsWriter(t *testing.T) {
	node := redistest.Start(t, 1).Nodes[0]
	s, err := redis.FromURL(node.URL("") + "?write_timeout=60s")
	require.NoError(t, err)
	defer s.Close()
	_, stop, err := s.Watch(bg, "warm") // the subscriber connection is open
	require.NoError(t, err)
	stop()
	node.Pause()
	defer node.Resume()

	// 2,000 subscriptions of 8 kB each, and as many unsubscriptions: far
	// more than the few MB a loopback socket buffers.
	const callers = 2000
	long := strings.Repeat("k", 8<<10)
	var (
		wg       sync.WaitGroup
		returned atomic.Int32
	)
	for i := 0; i < callers; i++ {
		wg.Add(1)
		go func(key string) {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(bg, 300*time.Millisecond)
			defer cancel()
			_, _, err := s.Watch(ctx, key)
			assert.Error(t, err, "the server is paused")
			returned.Add(1)
		}(long + strconv.Itoa(i))
	}
	// Every caller but the writer blocked on the full socket returns at its
	// deadline.
	for end := time.Now().Add(5 * time.Second); returned.Load() < callers-1 && time.Now().Before(end); {
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond) // and the writer stays blocked
	require.Equal(t, int32(callers-1), returned.Load(), "callers returned while the server is paused: all but one writer blocked on the full socket")

	closeStart := time.Now()
	require.NoError(t, s.Close())
	assert.Less(t, time.Since(closeStart), time.Second, "Close waited for the blocked write")
	wg.Wait()
}

// leftOf keeps of AcquireOrHolder's holder only its TTL.
func leftOf(ok bool, h keyserver.Holder, err error) (bool, time.Duration, error) {
	return ok, h.Left, err
}
