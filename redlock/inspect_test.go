package redlock

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goredlock/goredlock/internal/clock"
	"github.com/goredlock/goredlock/internal/layout"
	"github.com/goredlock/goredlock/keyserver"
	"github.com/goredlock/goredlock/keyserver/static"
)

// TestInspectMemory: a lock, two permits of three, two readers and a
// leader of one name on three memory servers, each seen by every server
// and by the quorum; holders by tag, never by token.
func TestInspectMemory(t *testing.T) {
	c, _ := memoryClient(t, WithFencing())
	st, err := c.Inspect(bg, "job")
	require.NoError(t, err)
	assert.Equal(t, "job", st.Name)
	assert.Equal(t, View{}, st.View, "nothing held")
	require.Len(t, st.Servers, 3)

	l, err := c.Acquire(bg, "job", 10*time.Second)
	require.NoError(t, err)
	sem := c.Semaphore("job", 3)
	p1, err := sem.Acquire(bg, 10*time.Second)
	require.NoError(t, err)
	p2, err := sem.Acquire(bg, 10*time.Second)
	require.NoError(t, err)
	r1, err := c.RWMutex("job").RLock(bg, 10*time.Second)
	require.NoError(t, err)
	r2, err := c.RWMutex("job").RLock(bg, 10*time.Second)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(bg)
	defer cancel()
	lead, err := c.Election("job").Campaign(ctx, 10*time.Second, "host-a")
	require.NoError(t, err)

	st, err = c.Inspect(bg, "job")
	require.NoError(t, err)
	want := View{Held: true, Holder: l.Token()[17:25], Left: 10 * time.Second, Fence: l.Fence(),
		Semaphore: SemaphoreView{Permits: 3, InUse: 2},
		RW:        RWView{Readers: 2},
		Election:  ElectionView{Leader: "host-a", Left: 10 * time.Second, Term: lead.Fence()}}
	assert.Equal(t, want, st.View)
	for i, s := range st.Servers {
		assert.NoError(t, s.Err, i)
		assert.Equal(t, want, s.View, i)
	}
	assert.Positive(t, l.Fence())
	assert.Positive(t, lead.Fence())
	for _, tok := range []string{l.Token(), p1.Token(), r1.Token(), lead.Token()} {
		assert.NotContains(t, fmt.Sprintf("%+v", st), tok, "a token is never in a Status")
	}

	for _, h := range []*Lock{l, p1, p2, r1, r2, lead} {
		require.NoError(t, h.Release(bg))
	}
	w, err := c.RWMutex("job").Lock(bg, 10*time.Second)
	require.NoError(t, err)
	st, err = c.Inspect(bg, "job")
	require.NoError(t, err)
	assert.False(t, st.Held)
	assert.Equal(t, RWView{Writer: w.Token()[17:25]}, st.RW)
	assert.Equal(t, l.Fence(), st.Fence, "the fence stays")
	assert.Equal(t, lead.Fence(), st.Election.Term, "the term stays")
	require.NoError(t, w.Release(bg))
}

// TestInspectKeyPrefix: Inspect reads the name under the client's prefix.
func TestInspectKeyPrefix(t *testing.T) {
	fc := clock.NewFake(t0)
	servers := memoryServers(t, fc, 3)
	app := testClient(t, fc, servers, WithKeyPrefix("app:"))
	plain := testClient(t, fc, servers)
	l, err := app.Acquire(bg, "job", 10*time.Second)
	require.NoError(t, err)
	st, err := app.Inspect(bg, "job")
	require.NoError(t, err)
	assert.True(t, st.Held)
	st, err = plain.Inspect(bg, "job")
	require.NoError(t, err)
	assert.False(t, st.Held)
	st, err = plain.Inspect(bg, "app:job")
	require.NoError(t, err)
	assert.True(t, st.Held)
	require.NoError(t, l.Release(bg))
}

// TestInspectLargeSemaphore: on memory servers, a semaphore of 10,000
// permits with 50 held is 50 in use; with more held than a server lists
// (keyserver.MaxInspected), each server counts them all and the verdict
// says it is truncated, never a wrong number; read holds alike.
func TestInspectLargeSemaphore(t *testing.T) {
	fc := clock.NewFake(t0)
	c := testClient(t, fc, memoryServers(t, fc, 3))
	sem := c.Semaphore("encoders", 10_000)
	rw := c.RWMutex("encoders")
	take := func(n int, try func() (*Lock, error)) {
		t.Helper()
		for refused := 0; n > 0; {
			_, err := try()
			if errors.Is(err, ErrHeldElsewhere) { // a slot picked at random was held
				refused++
				require.Less(t, refused, 100, "too many refusals: %v", err)
				continue
			}
			require.NoError(t, err)
			n--
		}
	}
	permit := func() (*Lock, error) { return sem.TryAcquire(bg, time.Minute) }
	take(50, permit)
	st, err := c.Inspect(bg, "encoders")
	require.NoError(t, err)
	assert.Equal(t, SemaphoreView{Permits: 10_000, InUse: 50}, st.Semaphore)

	held := keyserver.MaxInspected + 100
	take(held-50, permit)
	take(held, func() (*Lock, error) { return rw.TryRLock(bg, time.Minute) })
	st, err = c.Inspect(bg, "encoders")
	require.NoError(t, err)
	assert.True(t, st.Semaphore.Truncated)
	assert.Equal(t, keyserver.MaxInspected, st.Semaphore.InUse, "the listed ones, which a quorum holds")
	assert.True(t, st.RW.Truncated)
	assert.LessOrEqual(t, st.RW.Readers, keyserver.MaxInspected)
	for i, s := range st.Servers {
		assert.Equal(t, held, s.Semaphore.InUse, "server %d counts every permit", i)
		assert.Equal(t, held, s.RW.Readers, "server %d counts every reader", i)
		assert.False(t, s.Semaphore.Truncated || s.RW.Truncated)
	}
}

// TestInspectOneServerFailing: the quorum's verdict stands when one of
// three servers fails; when the failed servers could complete a quorum for
// a holder the others show, Inspect cannot tell and says so, with what
// the others hold.
func TestInspectOneServerFailing(t *testing.T) {
	fc := clock.NewFake(t0)
	servers := static.NewCluster(3)
	c := testClient(t, fc, servers.KeyServers())
	l, err := c.Acquire(bg, "job", 10*time.Second)
	require.NoError(t, err)
	c.bg.Wait() // the acquire's calls that the quorum did not wait for
	down := errors.New("connection refused")
	servers[2].Script(static.OpInspect, static.Fail(down))

	st, err := c.Inspect(bg, "job")
	require.NoError(t, err)
	assert.True(t, st.Held)
	assert.Equal(t, l.Token()[17:25], st.Holder)
	assert.True(t, st.Servers[0].Held)
	assert.True(t, st.Servers[1].Held)
	require.ErrorIs(t, st.Servers[2].Err, down)
	assert.Equal(t, View{}, st.Servers[2].View)

	// Two fail: one server holding and two unknown could be a quorum.
	servers[1].Script(static.OpInspect, static.Fail(down))
	st, err = c.Inspect(bg, "job")
	var qe *QuorumError
	require.ErrorAs(t, err, &qe)
	assert.Equal(t, "inspect", qe.Op)
	assert.Equal(t, 1, qe.Granted)
	assert.Len(t, qe.Failed, 2)
	assert.ErrorIs(t, err, down)
	assert.False(t, st.Held)
	assert.True(t, st.Servers[0].Held, "what the server that answered holds")

	// Released, with one failing: two free servers leave no quorum to
	// anyone.
	servers[1].Script(static.OpInspect)
	require.NoError(t, l.Release(bg))
	c.bg.Wait()
	st, err = c.Inspect(bg, "job")
	require.NoError(t, err)
	assert.False(t, st.Held)
	assert.Equal(t, 3, servers[0].Count(static.OpInspect), "each Inspect asks each server once")
}

// notInspector is a key server without Inspect: the embedded interface
// promotes KeyServer's methods only.
type notInspector struct{ keyserver.KeyServer }

// TestInspectServerWithoutInspector: a server that cannot inspect is not
// asked, and its ServerStatus says so; the others decide.
func TestInspectServerWithoutInspector(t *testing.T) {
	fc := clock.NewFake(t0)
	servers := static.NewCluster(3)
	c := testClient(t, fc, []keyserver.KeyServer{servers[0], notInspector{servers[1]}, servers[2]})
	l, err := c.Acquire(bg, "job", 10*time.Second)
	require.NoError(t, err)
	c.bg.Wait() // the acquire's calls that the quorum did not wait for
	st, err := c.Inspect(bg, "job")
	require.NoError(t, err)
	assert.True(t, st.Held)
	require.ErrorIs(t, st.Servers[1].Err, keyserver.ErrPermanent)
	assert.Contains(t, st.Servers[1].Err.Error(), "does not implement keyserver.Inspector")
	assert.Zero(t, servers[1].Count(static.OpInspect))
	require.NoError(t, l.Release(bg))

	none := testClient(t, fc, []keyserver.KeyServer{notInspector{servers[0]}, notInspector{servers[1]}})
	_, err = none.Inspect(bg, "job")
	var qe *QuorumError
	require.ErrorAs(t, err, &qe)
	assert.Len(t, qe.Failed, 2)
}

// inspectIdentified is a static server that says which store it reaches
// (its incarnation's ID, durable), and inspects.
type inspectIdentified struct {
	*static.Server
	id string
}

func (s inspectIdentified) Incarnation(context.Context) (keyserver.Incarnation, error) {
	return keyserver.Incarnation{ID: s.id, Up: time.Hour, Durable: true}, nil
}

// TestInspectOneStoreTwice: a read counts each store once: two servers
// that reach one store fail Inspect, as every call.
func TestInspectOneStoreTwice(t *testing.T) {
	fc := clock.NewFake(t0)
	servers := static.NewCluster(3)
	c := testClient(t, fc, []keyserver.KeyServer{
		inspectIdentified{servers[0], "a"}, inspectIdentified{servers[1], "b"}, inspectIdentified{servers[2], "a"}})
	_, err := c.Inspect(bg, "job")
	require.ErrorIs(t, err, ErrInvalidArgument)
	assert.Contains(t, err.Error(), "key servers 0 and 2 reach the same store")
}

func TestInspectBadName(t *testing.T) {
	c, _ := memoryClient(t)
	_, err := c.Inspect(bg, "")
	require.ErrorIs(t, err, ErrInvalidArgument)
	_, err = c.Inspect(bg, strings.Repeat("x", MaxNameLen+1))
	require.ErrorIs(t, err, ErrInvalidArgument)
	require.NoError(t, c.Close())
	_, err = c.Inspect(bg, "job")
	require.ErrorIs(t, err, ErrClosed)
}

// TestTag: a holder's tag is the call's random digits of a token of this
// module, a hash of any other; never the token.
func TestTag(t *testing.T) {
	const tok = "0000019a2b3c4d01.1a2b3c4d000000000000000000000001"
	assert.Equal(t, "1a2b3c4d", tag(tok))
	assert.Equal(t, "1a2b3c4d", tag("0000019a2b3c4d01.1a2b3c4d~~~~~~~~~~~~~~~~~~~~~~~~"), "a promise tags as its call")
	other := tag("token-a")
	assert.Len(t, other, 9)
	assert.True(t, strings.HasPrefix(other, "#"))
	assert.NotEqual(t, other, tag("token-b"))
	assert.Empty(t, tag(""))
}

// TestVerdict: counts are what a quorum reports at least; a TTL-less key
// outlasts the others.
func TestVerdict(t *testing.T) {
	hold := func(tok string, left time.Duration) keyserver.Hold { return keyserver.Hold{Token: tok, Left: left} }
	answered := []keyserver.NameStatus{
		{Lock: hold("a", -time.Millisecond), Waiters: 3, Fence: 4},
		{Lock: hold("a", 2*time.Second), Waiters: 1, Fence: 9},
		{Lock: hold("a", 5*time.Second), Waiters: 2, Fence: 7},
	}
	v, undecided := verdict(answered, 3, 2)
	assert.False(t, undecided)
	assert.Equal(t, View{Held: true, Holder: tag("a"), Left: 5 * time.Second, Waiters: 2, Fence: 9}, v)

	// Two permits on a quorum, a third on one server of three, one failed.
	permits := []keyserver.NameStatus{
		{Permits: 3, Slots: []keyserver.Hold{hold("p", time.Second), hold("q", time.Second), hold("r", time.Second)}},
		{Permits: 3, Slots: []keyserver.Hold{hold("p", time.Second), hold("q", time.Second)}},
	}
	v, undecided = verdict(permits, 3, 2)
	assert.Equal(t, SemaphoreView{Permits: 3, InUse: 2}, v.Semaphore)
	assert.True(t, undecided, "r could hold the failed server too")
	v, undecided = verdict(permits[1:], 3, 2)
	assert.Equal(t, SemaphoreView{}, v.Semaphore, "fewer than a quorum answered")
	assert.True(t, undecided)
}

// TestInspectLockDelay: Inspect reads a lock key with the client's own
// lock-delay d: the key lives the lease plus d, so Left is its TTL less
// d, and a key with d or less left is in its delay, held by nobody. The
// verdict's DelayLeft lasts while too many servers are in their delay for
// a quorum to grant. A client without the delay reads the whole TTL.
func TestInspectLockDelay(t *testing.T) {
	const ttl, d = 2 * time.Second, 5 * time.Second
	fc := clock.NewFake(t0)
	servers := memoryServers(t, fc, 5)
	c := testClient(t, fc, servers, WithLockDelay(d))
	plain := testClient(t, fc, servers)
	l, err := c.Acquire(bg, "job", ttl)
	require.NoError(t, err)
	st, err := c.Inspect(bg, "job")
	require.NoError(t, err)
	assert.True(t, st.Held)
	assert.Equal(t, ttl, st.Left, "the lease, not the key's TTL")
	assert.Zero(t, st.DelayLeft, "held: no delay in force")

	fc.Advance(ttl + time.Second) // the holder stopped extending
	st, err = c.Inspect(bg, "job")
	require.NoError(t, err)
	assert.False(t, st.Held, "in its delay, the lock is nobody's")
	assert.Empty(t, st.Holder)
	assert.Equal(t, d-time.Second, st.DelayLeft)
	for i, s := range st.Servers {
		assert.Equal(t, View{DelayLeft: d - time.Second}, s.View, "server %d", i)
	}
	st, err = plain.Inspect(bg, "job")
	require.NoError(t, err)
	assert.True(t, st.Held, "a client without the delay reads the key as held")
	assert.Equal(t, d-time.Second, st.Left)
	assert.Zero(t, st.DelayLeft)
	require.ErrorIs(t, l.Release(bg), ErrNotHeld, "released late, after its loss")
	st, err = c.Inspect(bg, "job")
	require.NoError(t, err)
	assert.Equal(t, View{}, st.View, "a release ends the delay")

	// Servers in their delays for different times, one not: a grant waits
	// while more than n-quorum (2 of 5) are in theirs.
	for i, left := range []time.Duration{5 * time.Second, 3 * time.Second, 0, 9 * time.Second, time.Second} {
		if left > 0 {
			ok, err := servers[i].Acquire(bg, "staggered", "token", left)
			require.True(t, ok && err == nil, "server %d: %v", i, err)
		}
	}
	st, err = c.Inspect(bg, "staggered")
	require.NoError(t, err)
	assert.Equal(t, time.Second, st.DelayLeft, "5 servers: 3 in their delay for at least 1s")
	var lefts []time.Duration
	for _, s := range st.Servers {
		lefts = append(lefts, s.DelayLeft)
	}
	assert.Equal(t, []time.Duration{5 * time.Second, 3 * time.Second, 0, 0, time.Second}, lefts)
	assert.Equal(t, 4*time.Second, st.Servers[3].Left, "a key with more than d left is held, for its TTL less d")
	assert.False(t, st.Held, "one server holds it")
}

// TestSplitDelay: a lock key's TTL read as a lease and a lock-delay d
// after it; a promise, a key without a TTL, a free key, and any key when
// d is 0, are read as they are.
func TestSplitDelay(t *testing.T) {
	const d = 5 * time.Second
	promise := layout.PromiseOf(newToken(newRank(t0)))
	require.True(t, layout.IsPromise(promise), "%q", promise)
	for _, tc := range []struct {
		name      string
		d         time.Duration
		lock      keyserver.Hold
		want      keyserver.Hold
		delayLeft time.Duration
	}{
		{"held", d, keyserver.Hold{Token: "a", Left: 7 * time.Second}, keyserver.Hold{Token: "a", Left: 2 * time.Second}, 0},
		{"a millisecond of its lease left", d, keyserver.Hold{Token: "a", Left: d + time.Millisecond}, keyserver.Hold{Token: "a", Left: time.Millisecond}, 0},
		{"its lease over", d, keyserver.Hold{Token: "a", Left: d}, keyserver.Hold{}, d},
		{"in its delay", d, keyserver.Hold{Token: "a", Left: time.Second}, keyserver.Hold{}, time.Second},
		{"no delay", 0, keyserver.Hold{Token: "a", Left: time.Second}, keyserver.Hold{Token: "a", Left: time.Second}, 0},
		{"free", d, keyserver.Hold{}, keyserver.Hold{}, 0},
		{"no TTL", d, keyserver.Hold{Token: "a", Left: -1}, keyserver.Hold{Token: "a", Left: -1}, 0},
		{"a promise", d, keyserver.Hold{Token: promise, Left: time.Second}, keyserver.Hold{Token: promise, Left: time.Second}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := keyserver.NameStatus{Lock: tc.lock, Waiters: 2}
			assert.Equal(t, tc.delayLeft, splitDelay(&s, tc.d))
			assert.Equal(t, keyserver.NameStatus{Lock: tc.want, Waiters: 2}, s)
		})
	}
}
