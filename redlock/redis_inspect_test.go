package redlock_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goredlock/goredlock/internal/redistest"
	"github.com/goredlock/goredlock/keyserver"
	"github.com/goredlock/goredlock/redlock"
)

// TestRedisInspect checks Inspect against three real Redis with known
// holders of each kind under one name: a lock and a waiter in its line,
// two permits of three, two readers and then a writer, a leader with its
// value and term, and a lock taken with a lock-delay.
func TestRedisInspect(t *testing.T) {
	cluster := redistest.Start(t, 3)
	c := clientOn(t, cluster, redlock.WithFencing())
	ctx := context.Background()
	const name = "job"
	inspect := func() redlock.Status {
		t.Helper()
		st, err := c.Inspect(ctx, name)
		require.NoError(t, err)
		require.Len(t, st.Servers, 3)
		for i, s := range st.Servers {
			require.NoError(t, s.Err, "server %d", i)
		}
		return st
	}
	// settled inspects until every server shows what ok asks of it: a
	// grant returns at a quorum, and the last server's write may land a
	// moment later on a loaded machine.
	settled := func(what string, ok func(redlock.ServerStatus) bool) redlock.Status {
		t.Helper()
		require.Eventually(t, func() bool {
			st, err := c.Inspect(ctx, name)
			if err != nil || len(st.Servers) != 3 {
				return false
			}
			for _, s := range st.Servers {
				if s.Err != nil || !ok(s) {
					return false
				}
			}
			return true
		}, 10*time.Second, 5*time.Millisecond, "%s on every server", what)
		return inspect()
	}
	var tokens []string
	noToken := func(st redlock.Status) {
		t.Helper()
		for _, tok := range tokens {
			assert.NotContains(t, fmt.Sprintf("%+v", st), tok, "a token is never in a Status")
		}
	}

	// A lock, and another Client's call waiting in its line.
	l, err := c.Acquire(ctx, name, 20*time.Second)
	require.NoError(t, err)
	tokens = append(tokens, l.Token())
	st := settled("the lock", func(s redlock.ServerStatus) bool { return s.Held })
	assert.True(t, st.Held)
	assert.Equal(t, l.Token()[17:25], st.Holder)
	assert.True(t, st.Left > 10*time.Second && st.Left <= 20*time.Second, "left %v", st.Left)
	assert.Equal(t, l.Fence(), st.Fence)
	assert.Positive(t, st.Fence)
	assert.Zero(t, st.Waiters)
	assert.Zero(t, st.DelayLeft)
	for _, s := range st.Servers {
		assert.True(t, s.Held)
		assert.Equal(t, st.Holder, s.Holder)
		assert.True(t, s.Left > 10*time.Second && s.Left <= 20*time.Second, "left %v", s.Left)
	}
	other := clientOn(t, cluster, redlock.WithRetryCount(-1))
	wctx, stopWaiting := context.WithCancel(ctx)
	waited := make(chan error, 1)
	go func() {
		_, err := other.Acquire(wctx, name, 20*time.Second)
		waited <- err
	}()
	require.Eventually(t, func() bool { return inspect().Waiters == 1 }, 10*time.Second, 20*time.Millisecond, "the waiter in line")
	stopWaiting()
	require.ErrorIs(t, <-waited, context.Canceled)
	noToken(st)
	require.NoError(t, l.Release(ctx))

	// Two permits of three.
	sem := c.Semaphore(name, 3)
	p1, err := sem.Acquire(ctx, 20*time.Second)
	require.NoError(t, err)
	p2, err := sem.Acquire(ctx, 20*time.Second)
	require.NoError(t, err)
	tokens = append(tokens, p1.Token(), p2.Token())
	st = settled("two permits", func(s redlock.ServerStatus) bool { return s.Semaphore.InUse == 2 })
	assert.False(t, st.Held, "the lock of the name is another key")
	assert.Equal(t, redlock.SemaphoreView{Permits: 3, InUse: 2}, st.Semaphore)
	for _, s := range st.Servers {
		assert.Equal(t, redlock.SemaphoreView{Permits: 3, InUse: 2}, s.Semaphore)
	}
	noToken(st)

	// Two readers, then a writer.
	rw := c.RWMutex(name)
	r1, err := rw.RLock(ctx, 20*time.Second)
	require.NoError(t, err)
	r2, err := rw.RLock(ctx, 20*time.Second)
	require.NoError(t, err)
	tokens = append(tokens, r1.Token(), r2.Token())
	st = settled("two readers", func(s redlock.ServerStatus) bool { return s.RW.Readers == 2 })
	assert.Equal(t, redlock.RWView{Readers: 2}, st.RW)
	noToken(st)
	require.NoError(t, r1.Release(ctx))
	require.NoError(t, r2.Release(ctx))
	w, err := rw.Lock(ctx, 20*time.Second)
	require.NoError(t, err)
	tokens = append(tokens, w.Token())
	st = settled("the writer", func(s redlock.ServerStatus) bool { return s.RW.Writer != "" })
	assert.Equal(t, redlock.RWView{Writer: w.Token()[17:25]}, st.RW, "servers: %+v", st.Servers)
	for _, s := range st.Servers {
		assert.Equal(t, st.RW, s.RW)
	}
	noToken(st)

	// A leader: its value and term.
	lctx, resign := context.WithCancel(ctx)
	defer resign()
	lead, err := c.Election(name).Campaign(lctx, 20*time.Second, "host-a")
	require.NoError(t, err)
	tokens = append(tokens, lead.Token())
	st = settled("the leader", func(s redlock.ServerStatus) bool { return s.Election.Leader != "" })
	assert.Equal(t, "host-a", st.Election.Leader)
	assert.Equal(t, lead.Fence(), st.Election.Term)
	assert.Positive(t, st.Election.Term)
	assert.True(t, st.Election.Left > 10*time.Second && st.Election.Left <= 20*time.Second, "left %v", st.Election.Left)
	noToken(st)

	// Everything at once, then all released: only the counters stay.
	assert.Equal(t, redlock.SemaphoreView{Permits: 3, InUse: 2}, st.Semaphore)
	assert.Equal(t, w.Token()[17:25], st.RW.Writer)
	for _, h := range []*redlock.Lock{p1, p2, w, lead} {
		require.NoError(t, h.Release(ctx))
	}
	st = settled("nothing held", func(s redlock.ServerStatus) bool {
		return s.Semaphore.InUse == 0 && s.RW.Writer == "" && s.Election.Leader == ""
	})
	assert.Equal(t, redlock.View{Fence: l.Fence(), Election: redlock.ElectionView{Term: lead.Fence()}}, st.View)

	// A lock taken with a lock-delay d, read by a client with the same d:
	// its keys live the lease plus d, and Left is the lease.
	const d = 30 * time.Second
	delayed := clientOn(t, cluster, redlock.WithLockDelay(d))
	ld, err := delayed.Acquire(ctx, name, 20*time.Second)
	require.NoError(t, err)
	st, err = delayed.Inspect(ctx, name)
	require.NoError(t, err)
	assert.True(t, st.Held)
	assert.Equal(t, ld.Token()[17:25], st.Holder)
	assert.True(t, st.Left > 10*time.Second && st.Left <= 20*time.Second, "left %v: the lease, not the lease plus the delay", st.Left)
	assert.Zero(t, st.DelayLeft)

	// Its lease ran out on two of three servers (their keys set as the
	// lease's end would leave them) and it was released on the third:
	// the keys live on for the delay, no quorum can grant until the
	// shorter of the two ends, and nobody holds the lock meanwhile. A
	// client without the delay reads the keys as held.
	require.NoError(t, ld.Release(ctx))
	for _, n := range cluster.Nodes {
		require.Eventually(t, func() bool { return n.MustDo("EXISTS", name) == int64(0) }, 5*time.Second, time.Millisecond, "the release")
	}
	cluster.Nodes[0].MustDo("SET", name, ld.Token(), "PX", 30000)
	cluster.Nodes[1].MustDo("SET", name, ld.Token(), "PX", 20000)
	st, err = delayed.Inspect(ctx, name)
	require.NoError(t, err)
	assert.False(t, st.Held, "in its delay, the lock is nobody's")
	assert.True(t, st.DelayLeft > 10*time.Second && st.DelayLeft <= 20*time.Second, "delay left %v", st.DelayLeft)
	assert.True(t, st.Servers[0].DelayLeft > 20*time.Second, "delay left %v", st.Servers[0].DelayLeft)
	assert.False(t, st.Servers[0].Held)
	assert.Zero(t, st.Servers[2].DelayLeft)
	st = inspect()
	assert.True(t, st.Held, "to a client without the delay")
	assert.Zero(t, st.DelayLeft)
}

// TestRedisInspectWithAServerDown: two of three servers hold the lock and
// the third is down: held, and the down server's error is its own.
func TestRedisInspectWithAServerDown(t *testing.T) {
	cluster := redistest.Start(t, 3)
	c := clientOn(t, cluster)
	ctx := context.Background()
	l, err := c.Acquire(ctx, "job", 20*time.Second)
	require.NoError(t, err)
	cluster.Nodes[1].Kill()
	st, err := c.Inspect(ctx, "job")
	require.NoError(t, err)
	assert.True(t, st.Held)
	assert.Error(t, st.Servers[1].Err)
	assert.True(t, st.Servers[0].Held)
	assert.True(t, st.Servers[2].Held)
	require.NoError(t, l.Release(ctx))
}

// TestRedisInspectOneRedisTwice: Inspect counts each store once.
func TestRedisInspectOneRedisTwice(t *testing.T) {
	cluster := redistest.Start(t, 2)
	_, port, err := net.SplitHostPort(cluster.Nodes[0].Addr())
	require.NoError(t, err)
	c, err := redlock.New(serversAt(t, []string{cluster.Nodes[0].URL(""), "redis://localhost:" + port, cluster.Nodes[1].URL("")}))
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	_, err = c.Inspect(context.Background(), "job")
	require.ErrorIs(t, err, redlock.ErrInvalidArgument)
	assert.Contains(t, err.Error(), "reach the same store")
}

// TestRedisInspectLargeSemaphore: a semaphore of 10,000 permits with 50
// held (each at a random slot, most past the first 1,024) is 50 in use in
// the verdict and on each server that took them; with more held than a
// server lists (keyserver.MaxInspected), each server still counts them
// all, and the verdict says it is truncated.
//
// A grant returns once a majority voted, so the permits are taken by a
// client that is closed before the inspection: Close waits for the calls
// still under way. A server's call may still fail on a loaded machine (its
// timeout), so a server is held to the permits it took, no fewer than all
// but a few, and never more.
func TestRedisInspectLargeSemaphore(t *testing.T) {
	cluster := redistest.Start(t, 3)
	ctx := context.Background()
	// take takes n permits; a TryAcquire that met a held slot (picked at
	// random) tries again.
	take := func(n int) {
		t.Helper()
		c := clientOn(t, cluster)
		sem := c.Semaphore("encoders", 10_000)
		for refused := 0; n > 0; {
			_, err := sem.TryAcquire(ctx, time.Minute)
			if errors.Is(err, redlock.ErrHeldElsewhere) {
				refused++
				require.Less(t, refused, 100, "too many refusals: %v", err)
				continue
			}
			require.NoError(t, err)
			n--
		}
		require.NoError(t, c.Close())
	}
	c := clientOn(t, cluster)
	inspect := func() redlock.Status {
		t.Helper()
		st, err := c.Inspect(ctx, "encoders")
		require.NoError(t, err)
		return st
	}
	// perServer checks that each server counts close to held permits, and
	// that together they hold each on a majority.
	perServer := func(st redlock.Status, held int) {
		t.Helper()
		sum := 0
		for i, s := range st.Servers {
			assert.LessOrEqual(t, s.Semaphore.InUse, held, "server %d", i)
			assert.GreaterOrEqual(t, s.Semaphore.InUse, held-held/10, "server %d counts every permit it took", i)
			assert.False(t, s.Semaphore.Truncated, "server %d", i)
			sum += s.Semaphore.InUse
		}
		assert.GreaterOrEqual(t, sum, 2*held, "each permit on a majority")
	}
	take(50)
	st := inspect()
	assert.Equal(t, redlock.SemaphoreView{Permits: 10_000, InUse: 50}, st.Semaphore)
	perServer(st, 50)

	take(keyserver.MaxInspected + 50)
	held := keyserver.MaxInspected + 100
	st = inspect()
	assert.True(t, st.Semaphore.Truncated, "more held than listed")
	assert.LessOrEqual(t, st.Semaphore.InUse, held)
	assert.GreaterOrEqual(t, st.Semaphore.InUse, keyserver.MaxInspected-50, "the listed ones a quorum holds")
	perServer(st, held)
	assert.Greater(t, st.Servers[0].Semaphore.InUse, keyserver.MaxInspected, "a server counts past what it lists")
}
