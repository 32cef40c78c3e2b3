package redlock

import (
	"context"
	"errors"
	"fmt"
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

// lives scripts the incarnations of static servers on a fake clock: each
// server has an ID, the time it came back, and whether it is durable.
type lives struct {
	fc      *clock.Fake
	mu      sync.Mutex
	id      []int
	back    []time.Time
	durable []bool
	err     []error
}

// livesCluster returns n static servers on fc, up since an hour before
// now, not durable, and the script of their lives.
func livesCluster(fc *clock.Fake, n int) (*lives, static.Cluster) {
	l := &lives{fc: fc, id: make([]int, n), back: make([]time.Time, n), durable: make([]bool, n), err: make([]error, n)}
	cl := make(static.Cluster, n)
	for i := range cl {
		l.back[i] = fc.Now().Add(-time.Hour)
		cl[i] = static.New(static.WithNow(fc.Now), static.WithIncarnation(func() (keyserver.Incarnation, error) {
			l.mu.Lock()
			defer l.mu.Unlock()
			return keyserver.Incarnation{ID: fmt.Sprint(i, ".", l.id[i]), Up: fc.Now().Sub(l.back[i]), Durable: l.durable[i]}, l.err[i]
		}))
	}
	return l, cl
}

// restart makes server i restart now: a new ID, up from now.
func (l *lives) restart(i int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.id[i]++
	l.back[i] = l.fc.Now()
}

// granted takes name on c, which must be granted, and releases it.
func granted(t *testing.T, c *Client, name string, ttl time.Duration, opts ...Option) {
	t.Helper()
	lock, err := c.TryAcquire(bg, name, ttl, opts...)
	require.NoError(t, err)
	require.NoError(t, lock.Release(bg))
}

// quarantined returns the servers whose failure in err is ErrQuarantined.
func quarantined(t *testing.T, err error) []int {
	t.Helper()
	var qe *QuorumError
	require.ErrorAs(t, err, &qe)
	var got []int
	for _, f := range qe.Failed {
		if errors.Is(f, ErrQuarantined) {
			got = append(got, f.Server)
		}
	}
	slices.Sort(got) // in the order they answered
	return got
}

// TestRestartedServersDoNotCountUntilTheTTLPassed: two of three servers
// restart while the client runs; their grants do not count (the lock is
// refused, and the keys they set are released) until the call's TTL has
// passed since they came back, on the fake clock.
func TestRestartedServersDoNotCountUntilTheTTLPassed(t *testing.T) {
	fc := clock.NewFake(t0)
	l, cl := livesCluster(fc, 3)
	c := testClient(t, fc, cl.KeyServers())
	const ttl = 10 * time.Second

	granted(t, c, "before", ttl) // servers up for an hour count

	fc.Advance(time.Minute)
	l.restart(1)
	l.restart(2)
	fc.Advance(ttl - time.Millisecond)
	_, err := c.TryAcquire(bg, "after", ttl)
	require.ErrorIs(t, err, ErrNotAcquired)
	assert.Equal(t, []int{1, 2}, quarantined(t, err))
	assert.ErrorContains(t, err, "its grants count in 1ms")
	for i, s := range cl {
		assert.Eventually(t, func() bool { // released in the background
			ok, err := s.Acquire(bg, "after", "someone else", ttl)
			return err == nil && ok
		}, wait, time.Millisecond, "server %d: the key of the refused attempt was released", i)
		_, err = s.Release(bg, "after", "someone else")
		require.NoError(t, err)
	}

	fc.Advance(time.Millisecond)
	granted(t, c, "after", ttl) // the TTL has passed since they came back

	_, err = c.TryAcquire(bg, "longer", 2*ttl)
	assert.Equal(t, []int{1, 2}, quarantined(t, err), "a call with a longer TTL waits that TTL")
}

// TestQuarantineSpares: what is not quarantined: durable servers, any
// server with NoQuarantine, and servers that were up before the client
// was made (unless WithQuarantine(d) asks for them).
func TestQuarantineSpares(t *testing.T) {
	const ttl = 10 * time.Second
	t.Run("durable", func(t *testing.T) {
		fc := clock.NewFake(t0)
		l, cl := livesCluster(fc, 3)
		c := testClient(t, fc, cl.KeyServers())
		l.durable[1], l.durable[2] = true, true
		l.restart(1)
		l.restart(2)
		granted(t, c, "k", ttl)
	})
	t.Run("NoQuarantine", func(t *testing.T) {
		fc := clock.NewFake(t0)
		l, cl := livesCluster(fc, 3)
		c := testClient(t, fc, cl.KeyServers())
		l.restart(1)
		l.restart(2)
		granted(t, c, "k", ttl, WithQuarantine(NoQuarantine)) // per call
		c2 := testClient(t, fc, cl.KeyServers(), WithQuarantine(-time.Hour))
		granted(t, c2, "k", ttl) // per client, any negative d
	})
	t.Run("WithQuarantine(d)", func(t *testing.T) {
		fc := clock.NewFake(t0)
		l, cl := livesCluster(fc, 3)
		l.restart(1)
		l.restart(2)
		fc.Advance(ttl)
		c := testClient(t, fc, cl.KeyServers())
		granted(t, c, "k", ttl) // back a TTL ago: counted by default

		_, err := c.TryAcquire(bg, "k", ttl, WithQuarantine(time.Minute))
		assert.Equal(t, []int{1, 2}, quarantined(t, err), "WithQuarantine(d): every server up less than d")
		fc.Advance(time.Minute)
		granted(t, c, "k", ttl, WithQuarantine(time.Minute))
	})
}

// TestQuarantineCatches: a server that came back after the client was
// made but before the client first reached it, one that came back before
// the client was made (a fresh process: rule 19), and a server that cannot
// tell; and what is no restart: a new ID up since before the client last
// saw the old one.
func TestQuarantineCatches(t *testing.T) {
	const ttl = 10 * time.Second
	t.Run("back before the client was made", func(t *testing.T) {
		fc := clock.NewFake(t0)
		l, cl := livesCluster(fc, 3)
		l.restart(1)
		l.restart(2)
		fc.Advance(ttl - time.Millisecond)
		c := testClient(t, fc, cl.KeyServers())
		_, err := c.TryAcquire(bg, "k", ttl)
		assert.Equal(t, []int{1, 2}, quarantined(t, err), "a fresh process is not granted what the restart lost")
		assert.ErrorContains(t, err, "its grants count in 1ms")
		fc.Advance(time.Millisecond)
		granted(t, c, "k", ttl)
	})
	t.Run("back before the first call", func(t *testing.T) {
		fc := clock.NewFake(t0)
		l, cl := livesCluster(fc, 3)
		c := testClient(t, fc, cl.KeyServers())
		fc.Advance(time.Minute)
		l.restart(0)
		l.restart(2)
		fc.Advance(ttl / 2)
		_, err := c.TryAcquire(bg, "k", ttl)
		assert.Equal(t, []int{0, 2}, quarantined(t, err))
	})
	t.Run("a new ID, up for longer", func(t *testing.T) {
		fc := clock.NewFake(t0)
		l, cl := livesCluster(fc, 3)
		c := testClient(t, fc, cl.KeyServers())
		granted(t, c, "k", ttl)
		fc.Advance(time.Minute)
		l.mu.Lock()
		l.id[0]++
		l.id[1]++ // up for an hour: another node of a Cluster, not a restart
		l.mu.Unlock()
		granted(t, c, "k", ttl)
	})
	t.Run("cannot tell", func(t *testing.T) {
		fc := clock.NewFake(t0)
		l, cl := livesCluster(fc, 3)
		c := testClient(t, fc, cl.KeyServers())
		l.err[0], l.err[1] = errors.New("INFO refused"), errors.New("INFO refused")
		_, err := c.TryAcquire(bg, "k", ttl)
		assert.Empty(t, quarantined(t, err), "a server that could not be asked is no restart (rule 22)")
		assert.NotErrorIs(t, err, ErrQuarantined)
		assert.ErrorContains(t, err, "INFO refused")
	})
}

// TestAnswerJudgedLateDoesNotHideARestart: an answer judged after its
// server restarted (its goroutine ran late, as under load) tells of the
// incarnation before the restart. Dated when it was judged, it made the
// restart, seen next, pass for an older node's: its grant counted at once.
func TestAnswerJudgedLateDoesNotHideARestart(t *testing.T) {
	fc := clock.NewFake(t0)
	l, cl := livesCluster(fc, 3)
	var late atomic.Bool
	cl[0] = static.New(static.WithNow(fc.Now), static.WithIncarnation(func() (keyserver.Incarnation, error) {
		l.mu.Lock()
		in := keyserver.Incarnation{ID: fmt.Sprint("0.", l.id[0]), Up: fc.Now().Sub(l.back[0])}
		l.mu.Unlock()
		if late.CompareAndSwap(true, false) { // read before the restart, judged after it
			fc.Advance(time.Millisecond)
			l.restart(0)
			fc.Advance(time.Millisecond)
		}
		return in, nil
	}))
	c := testClient(t, fc, cl.KeyServers())
	const ttl = 10 * time.Second
	granted(t, c, "k", ttl)
	fc.Advance(time.Minute)
	late.Store(true)
	granted(t, c, "k", ttl)
	c.bg.Wait() // server 0's answer may come after the two others decided
	require.False(t, late.Load(), "server 0's incarnation read during the grant")

	ok, err := cl[2].Acquire(bg, "j", "someone else", ttl)
	require.True(t, ok)
	require.NoError(t, err)
	_, err = c.TryAcquire(bg, "j", ttl)
	require.ErrorIs(t, err, ErrNotAcquired, "granted with the grant of a server that restarted 1ms ago")
	assert.Equal(t, []int{0}, quarantined(t, err))
}

// TestQuarantinedExtendsDoNotCount: a holder whose servers restarted
// cannot extend on them: the extension counts no more than a grant would.
func TestQuarantinedExtendsDoNotCount(t *testing.T) {
	fc := clock.NewFake(t0)
	l, cl := livesCluster(fc, 3)
	c := testClient(t, fc, cl.KeyServers())
	lock, err := c.TryAcquire(bg, "k", 10*time.Second)
	require.NoError(t, err)
	fc.Advance(2 * time.Second) // more than upSlack into the client's life, so that even a first sight after the restart sees one
	l.restart(0)
	l.restart(1)
	err = lock.Extend(bg, 10*time.Second)
	assert.Equal(t, []int{0, 1}, quarantined(t, err))
	assert.NoError(t, lock.Err(), "not lost: a failed extension ends nothing before the loss margin")
	require.NoError(t, lock.Release(context.WithoutCancel(bg)))
}

// TestRestartInTheFirstSecondAfterRefusals: a client whose first calls to
// its servers are refused (another client holds the lock) sees their
// incarnations then, so that a majority restarting empty in the first
// second of its life is caught when those servers grant it: the case the
// long chaos run found, where the first sighting was the first grant and
// the restart passed for one before the client was made.
func TestRestartInTheFirstSecondAfterRefusals(t *testing.T) {
	fc := clock.NewFake(t0)
	l, cl := livesCluster(fc, 3)
	holder := testClient(t, fc, cl.KeyServers())
	lock, err := holder.TryAcquire(bg, "k", 10*time.Second)
	require.NoError(t, err)
	c := testClient(t, fc, cl.KeyServers())
	_, err = c.TryAcquire(bg, "k", 10*time.Second)
	require.ErrorIs(t, err, ErrHeldElsewhere, "refused by every server: the lock is held")
	// Each call decided at two answers; the third, on its way still, would
	// land after the Releases below: the holder's refusing c for it, c's
	// granted and refusing c's next call.
	for i, s := range cl {
		require.Eventually(t, func() bool {
			done := 0
			for _, call := range s.Calls() {
				if call.Op == static.OpAcquire && call.Done {
					done++
				}
			}
			return done == 2
		}, wait, time.Millisecond, "server %d answered both acquires", i)
	}

	fc.Advance(300 * time.Millisecond)
	l.restart(1) // empty: the holder's keys on them are gone
	l.restart(2)
	for _, i := range []int{1, 2} {
		_, err := cl[i].Release(bg, "k", lock.Token())
		require.NoError(t, err)
	}
	_, err = c.TryAcquire(bg, "k", 10*time.Second)
	require.ErrorIs(t, err, ErrNotAcquired, "granted by two servers that restarted under a held lock")
	q := quarantined(t, err) // as the votes stood at the verdict: one or both
	assert.NotEmpty(t, q, "%v", err)
	assert.Subset(t, []int{1, 2}, q)
	_ = lock.Release(bg) // held on server 0 only by now
}

// TestPrimitivesAreQuarantined: a permit, a write hold and a leadership
// are taken as a lock is, so a majority of servers that restarted empty
// while the client ran does not count for them either until the TTL has
// passed since (the chaos suite found the primitives' attempts without
// the quarantine).
func TestPrimitivesAreQuarantined(t *testing.T) {
	fc := clock.NewFake(t0)
	l, cl := livesCluster(fc, 3)
	c := testClient(t, fc, cl.KeyServers())
	const ttl = 10 * time.Second
	held, err := c.RWMutex("held").TryLock(bg, ttl)
	require.NoError(t, err)
	fc.Advance(2 * time.Second)
	l.restart(0)
	l.restart(1)
	err = held.Extend(bg, ttl)
	assert.Equal(t, []int{0, 1}, quarantined(t, err), "an extension of a write hold: %v", err)
	require.NoError(t, held.Release(context.WithoutCancel(bg)))
	_, err = c.Semaphore("s", 2).TryAcquire(bg, ttl)
	assert.Equal(t, []int{0, 1}, quarantined(t, err), "a permit: %v", err)
	_, err = c.RWMutex("rw").TryLock(bg, ttl)
	assert.Equal(t, []int{0, 1}, quarantined(t, err), "a write hold: %v", err)
	fc.Advance(ttl)
	p, err := c.Semaphore("s", 2).TryAcquire(bg, ttl)
	require.NoError(t, err, "a permit a TTL after the restarts")
	require.NoError(t, p.Release(bg))
}

// silentIncarnation is a static server whose Incarnation answers only
// when its context ends: a server that cannot be identified.
type silentIncarnation struct{ *static.Server }

func (silentIncarnation) Incarnation(ctx context.Context) (keyserver.Incarnation, error) {
	<-ctx.Done()
	return keyserver.Incarnation{}, ctx.Err()
}

// TestUnidentifiedServerCostsNothing: the incarnation read that identifies
// a server holds up no vote but that server's own, which fails, never
// asked to acquire, with the read's own error: a server that could not be
// asked is not known to have restarted (rule 22), whether or not the
// call's grants are judged.
func TestUnidentifiedServerCostsNothing(t *testing.T) {
	fc := clock.NewFake(t0)
	servers := static.NewCluster(3)
	c := testClient(t, fc, []keyserver.KeyServer{servers[0], servers[1], silentIncarnation{servers[2]}},
		WithServerTimeout(time.Second))
	res := async(t, func() lockResult { l, err := c.TryAcquire(bg, "job", 10*time.Second); return lockResult{l, err} })()
	require.NoError(t, res.err, "granted by the two identified servers")
	assert.Equal(t, t0, fc.Now(), "no time passed: nobody waited for the silent read")
	fc.Advance(time.Second) // the silent read ends with its call's bound
	c.bg.Wait()
	assert.Zero(t, servers[2].Count(static.OpAcquire), "not asked to vote before it was identified")
	require.NoError(t, res.lock.Release(bg))

	l, cl := livesCluster(fc, 3)
	l.err[0], l.err[1] = errors.New("INFO refused"), errors.New("INFO refused")
	c2 := testClient(t, fc, cl.KeyServers())
	_, err := c2.TryAcquire(bg, "k", 10*time.Second, WithQuarantine(NoQuarantine))
	require.ErrorIs(t, err, ErrNotAcquired)
	assert.NotErrorIs(t, err, ErrQuarantined, "no grant of the call is judged")
	assert.ErrorContains(t, err, "INFO refused")
	assert.Zero(t, cl[0].Count(static.OpAcquire)+cl[1].Count(static.OpAcquire), "neither was asked to vote")
	c2.bg.Wait() // the undo of server 2's grant, else the next call finds the key held there
	_, err = c2.TryAcquire(bg, "k", 10*time.Second)
	assert.Empty(t, quarantined(t, err), "asked again by the next call, which judges grants: %v", err)
	assert.NotErrorIs(t, err, ErrQuarantined)
	assert.ErrorContains(t, err, "INFO refused")
}
