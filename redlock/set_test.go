package redlock

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goredlock/goredlock/internal/clock"
	"github.com/goredlock/goredlock/keyserver"
	"github.com/goredlock/goredlock/keyserver/memory"
	"github.com/goredlock/goredlock/keyserver/static"
)

// TestAcquireAllTakesEveryNameOrNone: a set one of whose names is held
// elsewhere is refused and holds nothing; once free, one Lock holds every
// name, and releasing it frees them all.
func TestAcquireAllTakesEveryNameOrNone(t *testing.T) {
	fc := clock.NewFake(t0)
	servers := memoryServers(t, fc, 3)
	c := testClient(t, fc, servers)
	other := testClient(t, fc, servers)
	b, err := other.TryAcquire(bg, "b", ttl3)
	require.NoError(t, err)

	_, err = c.TryAcquireAll(bg, []string{"a", "b", "c"}, ttl3)
	require.ErrorIs(t, err, ErrHeldElsewhere)
	assert.Contains(t, err.Error(), `locks "a,b,c" not acquired`)
	for _, name := range []string{"a", "c"} {
		l, err := other.TryAcquire(bg, name, ttl3)
		require.NoError(t, err, "%s was not taken by the refused set", name)
		require.NoError(t, l.Release(bg))
	}

	require.NoError(t, b.Release(bg))
	set, err := c.TryAcquireAll(bg, []string{"a", "b", "c", "b"}, ttl3)
	require.NoError(t, err)
	assert.Equal(t, []string{"a", "b", "c"}, set.Names(), "deduplicated, in the order given")
	for _, name := range []string{"a", "b", "c"} {
		_, err := other.TryAcquire(bg, name, ttl3)
		require.ErrorIs(t, err, ErrHeldElsewhere, "%s is the set's", name)
	}
	require.NoError(t, set.Extend(bg, ttl3))
	require.NoError(t, set.Release(bg))
	for _, name := range []string{"a", "b", "c"} {
		l, err := other.TryAcquire(bg, name, ttl3)
		require.NoError(t, err, "%s is free after the set's release", name)
		require.NoError(t, l.Release(bg))
	}
}

func TestAcquireAllOfOneNameIsAcquire(t *testing.T) {
	fc := clock.NewFake(t0)
	c := testClient(t, fc, memoryServers(t, fc, 3), WithFencing())
	l, err := c.AcquireAll(bg, []string{"job", "job"}, ttl3)
	require.NoError(t, err)
	assert.Equal(t, "job", l.Name())
	assert.Equal(t, []string{"job"}, l.Names())
	assert.Equal(t, l.Fence(), l.FenceOf("job"))
	assert.Zero(t, l.FenceOf("other"))
	require.NoError(t, l.Release(bg))
}

// TestAcquireAllFencesEachName: with fencing, each name of a set has a
// token greater than every earlier grant of that name, alone or in a set.
func TestAcquireAllFencesEachName(t *testing.T) {
	fc := clock.NewFake(t0)
	c := testClient(t, fc, memoryServers(t, fc, 3), WithFencing())
	for range 3 {
		l, err := c.TryAcquire(bg, "a", ttl3)
		require.NoError(t, err)
		require.NoError(t, l.Release(bg))
	}
	set, err := c.TryAcquireAll(bg, []string{"a", "b"}, ttl3)
	require.NoError(t, err)
	assert.Equal(t, uint64(4), set.FenceOf("a"))
	assert.Equal(t, uint64(1), set.FenceOf("b"))
	assert.Equal(t, set.FenceOf("a"), set.Fence(), "Fence is the first name's")
	require.NoError(t, set.Release(bg))
	l, err := c.TryAcquire(bg, "b", ttl3)
	require.NoError(t, err)
	assert.Equal(t, uint64(2), l.Fence())
	require.NoError(t, l.Release(bg))
}

func TestAcquireAllChecksItsNames(t *testing.T) {
	fc := clock.NewFake(t0)
	c := testClient(t, fc, memoryServers(t, fc, 3))
	tooMany := make([]string, MaxNames+1)
	for i := range tooMany {
		tooMany[i] = fmt.Sprint("n", i)
	}
	for _, names := range [][]string{nil, {"a", ""}, {"a", strings.Repeat("x", MaxNameLen+1)}, tooMany} {
		_, err := c.TryAcquireAll(bg, names, ttl3)
		require.ErrorIs(t, err, ErrInvalidArgument, "%d names", len(names))
	}
	plain := testClient(t, fc, []keyserver.KeyServer{memory.New(memory.WithSweepInterval(0)), notAFencer{memory.New(memory.WithSweepInterval(0))}})
	_, err := plain.TryAcquireAll(bg, []string{"a", "b"}, ttl3)
	require.ErrorIs(t, err, ErrInvalidArgument, "a server that is no SetLocker")
	assert.Contains(t, err.Error(), "SetLocker")
}

// TestDoAllNamesItsSetInErrors: what DoAll and DoAllOrSkip refuse before
// asking a server names the whole set, not its first name.
func TestDoAllNamesItsSetInErrors(t *testing.T) {
	fc := clock.NewFake(t0)
	c := testClient(t, fc, memoryServers(t, fc, 3))
	names := []string{"a", "b"}
	noop := func(context.Context) error { return nil }
	err := c.DoAll(bg, names, time.Millisecond, noop)
	require.ErrorIs(t, err, ErrInvalidArgument)
	assert.Contains(t, err.Error(), `ttl 1ms of locks "a,b"`)
	err = c.DoAll(bg, names, ttl3, nil)
	require.ErrorIs(t, err, ErrInvalidArgument)
	assert.Contains(t, err.Error(), `nil function for locks "a,b"`)
	_, err = c.DoAllOrSkip(bg, names, ttl3, noop, WithKeepAliveInterval(ttl3))
	require.ErrorIs(t, err, ErrInvalidArgument)
	assert.Contains(t, err.Error(), `to extend the locks "a,b"`)
	err = c.DoAll(bg, names[:1], time.Millisecond, noop)
	require.ErrorIs(t, err, ErrInvalidArgument)
	assert.Contains(t, err.Error(), `ttl 1ms of lock "a"`, "one name is a lock")
}

// TestDoAllAndDoAllOrSkip: DoAll runs fn holding every name; DoAllOrSkip
// skips while one of them is held elsewhere.
func TestDoAllAndDoAllOrSkip(t *testing.T) {
	fc := clock.NewFake(t0)
	servers := memoryServers(t, fc, 3)
	c := testClient(t, fc, servers)
	other := testClient(t, fc, servers)
	err := c.DoAll(bg, []string{"a", "b"}, ttl3, func(ctx context.Context) error {
		l, ok := LockFromContext(ctx)
		require.True(t, ok)
		assert.Equal(t, []string{"a", "b"}, l.Names())
		_, err := other.TryAcquire(bg, "b", ttl3)
		assert.ErrorIs(t, err, ErrHeldElsewhere)
		return nil
	})
	require.NoError(t, err)
	held, err := other.TryAcquire(bg, "b", ttl3)
	require.NoError(t, err)
	ran, err := c.DoAllOrSkip(bg, []string{"a", "b"}, ttl3, func(context.Context) error { return nil })
	require.NoError(t, err)
	assert.False(t, ran, "b is held elsewhere")
	require.NoError(t, held.Release(bg))
	ran, err = c.DoAllOrSkip(bg, []string{"a", "b"}, ttl3, func(context.Context) error { return nil })
	require.NoError(t, err)
	assert.True(t, ran)
}

// TestOverlappingSetsDoNotDeadlock: Clients taking overlapping sets in
// opposite orders, over and over, all get through, and no two hold a
// name at once.
func TestOverlappingSetsDoNotDeadlock(t *testing.T) {
	servers := make([]keyserver.KeyServer, 3)
	for i := range servers {
		s := memory.New(memory.WithSweepInterval(0))
		t.Cleanup(func() { s.Close() })
		servers[i] = s
	}
	sets := [][]string{{"a", "b"}, {"b", "a"}, {"b", "c"}, {"c", "a"}}
	ctx, cancel := context.WithTimeout(bg, time.Minute)
	defer cancel()
	var holders [3]atomic.Int32 // per name a, b, c
	var wg sync.WaitGroup
	for i, names := range sets {
		c, err := New(servers, WithRetryDelay(time.Millisecond), WithRetryCount(-1))
		require.NoError(t, err)
		t.Cleanup(func() { c.Close() })
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 25 {
				err := c.DoAll(ctx, names, time.Second, func(context.Context) error {
					for _, n := range names {
						if holders[n[0]-'a'].Add(1) != 1 {
							t.Errorf("client %d: %s held twice", i, n)
						}
					}
					for _, n := range names {
						holders[n[0]-'a'].Add(-1)
					}
					return nil
				})
				if err != nil {
					t.Errorf("client %d: %v", i, err)
					return
				}
			}
		}()
	}
	wg.Wait()
}

// TestAcquireAllWithAFailedMinority: a set is granted by a quorum, as a
// lock is, and undone where the attempt that failed took it.
func TestAcquireAllWithAFailedMinority(t *testing.T) {
	fc := clock.NewFake(t0)
	servers := static.NewCluster(3)
	servers[0].Script(static.OpAcquire, static.Fail(errors.New("connection refused")))
	c := testClient(t, fc, servers.KeyServers())
	set, err := c.TryAcquireAll(bg, []string{"a", "b"}, ttl3)
	require.NoError(t, err)
	require.NoError(t, set.Release(bg))
	servers[1].Script(static.OpAcquire, static.Deny)
	_, err = c.TryAcquireAll(bg, []string{"a", "b"}, ttl3)
	require.ErrorIs(t, err, ErrNotAcquired)
	var qe *QuorumError
	require.ErrorAs(t, err, &qe)
	assert.Len(t, qe.Failed, 1)
	for _, call := range servers[2].Calls() {
		if call.Op == static.OpAcquire {
			assert.Equal(t, "a,b", call.Key, "one call for the set")
		}
	}
}
