package redlock

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goredlock/goredlock/internal/clock"
)

// TestRWMutexReadersShareWritersAlone: 8 readers and 2 writers in 2
// Clients take one read-write lock 5 times each: readers overlap (at
// least 4 at once), and a writer never holds it with anyone.
func TestRWMutexReadersShareWritersAlone(t *testing.T) {
	fc := clock.NewFake(t0)
	servers := memoryServers(t, fc, 3)
	clients := []*Client{testClient(t, fc, servers, WithRetryCount(-1)), testClient(t, fc, servers, WithRetryCount(-1))}
	occ := newOccupancy()
	runWorkers(t, fc, 10, func(i int) {
		m := clients[i%2].RWMutex("table")
		write := i >= 8
		for range 5 {
			take, kind := m.RLock, "reader"
			if write {
				take, kind = m.Lock, "writer"
			}
			l, err := take(bg, 10*time.Second)
			if !assert.NoError(t, err) {
				return
			}
			now := occ.enter(kind)
			if now["writer"] > 1 || (now["writer"] == 1 && now["reader"] > 0) {
				t.Errorf("%d writers and %d readers hold the lock at once", now["writer"], now["reader"])
			}
			assert.NoError(t, fc.Sleep(bg, 100*time.Millisecond))
			occ.leave(kind)
			assert.NoError(t, l.Release(bg))
		}
	})
	assert.GreaterOrEqual(t, occ.most("reader"), 4, "the most readers at once")
	assert.Equal(t, 1, occ.most("writer"), "the most writers at once")
}

// TestRWMutexWriterIsNotStarved: 8 readers in 2 Clients take the lock
// again the moment they release it, so that some reader always holds it;
// a writer that asks meanwhile keeps new readers out and gets the lock
// within a reader's hold (well within 2 s), and the readers get back in
// after it.
func TestRWMutexWriterIsNotStarved(t *testing.T) {
	fc := clock.NewFake(t0)
	servers := memoryServers(t, fc, 3)
	clients := []*Client{testClient(t, fc, servers, WithRetryCount(-1)), testClient(t, fc, servers, WithRetryCount(-1))}
	ctx, stop := context.WithCancel(bg)
	defer stop()
	var reads, readsAfter atomic.Int64
	var written atomic.Bool
	var asked, granted time.Time
	runWorkers(t, fc, 9, func(i int) {
		m := clients[i%2].RWMutex("table")
		if i == 8 { // the writer
			assert.NoError(t, fc.Sleep(bg, 250*time.Millisecond)) // the readers overlap by then
			asked = fc.Now()
			l, err := m.Lock(bg, 10*time.Second)
			if !assert.NoError(t, err) {
				stop()
				return
			}
			granted = fc.Now()
			written.Store(true)
			assert.NoError(t, fc.Sleep(bg, 50*time.Millisecond))
			assert.NoError(t, l.Release(bg))
			// Let the readers show they get back in, then stop them.
			assert.NoError(t, fc.Sleep(bg, time.Second))
			stop()
			return
		}
		// Each reader holds 100 ms and comes back at once, staggered so
		// that the lock is never free of readers.
		assert.NoError(t, fc.Sleep(bg, time.Duration(i)*10*time.Millisecond))
		for ctx.Err() == nil {
			l, err := m.RLock(ctx, 10*time.Second)
			if err != nil {
				assert.ErrorIs(t, err, context.Canceled)
				return
			}
			reads.Add(1)
			if written.Load() {
				readsAfter.Add(1)
			}
			_ = fc.Sleep(ctx, 100*time.Millisecond)
			assert.NoError(t, l.Release(bg))
		}
	})
	require.False(t, granted.IsZero(), "the writer was never granted")
	assert.Less(t, granted.Sub(asked), 2*time.Second, "the writer's wait")
	assert.Positive(t, readsAfter.Load(), "reads after the writer released")
	t.Logf("%d reads; the writer waited %v", reads.Load(), granted.Sub(asked))
}

// TestRWMutexTryInTheOtherMode: a lock held in one mode makes TryLock or
// TryRLock in the other fail at once with ErrHeldElsewhere; a TryLock
// leaves no mark that keeps readers out. Read holds are extended and
// released one by one.
func TestRWMutexTryInTheOtherMode(t *testing.T) {
	fc := clock.NewFake(t0)
	c := testClient(t, fc, memoryServers(t, fc, 3))
	m := c.RWMutex("table")
	r1, err := m.TryRLock(bg, time.Minute)
	require.NoError(t, err)
	r2, err := m.TryRLock(bg, time.Minute)
	require.NoError(t, err, "a second reader")
	_, err = m.TryLock(bg, time.Minute)
	require.ErrorIs(t, err, ErrHeldElsewhere, "a writer while read")
	r3, err := m.TryRLock(bg, time.Minute)
	require.NoError(t, err, "a reader after a TryLock, which does not wait")
	fc.Advance(40 * time.Second)
	require.NoError(t, r1.Extend(bg, time.Minute), "one reader's extension")
	fc.Advance(30 * time.Second) // r2 and r3 run out, r1 does not
	require.ErrorIs(t, r2.Err(), ErrLockLost)
	_, err = m.TryLock(bg, time.Minute)
	require.ErrorIs(t, err, ErrHeldElsewhere, "a writer while r1 still reads")
	require.NoError(t, r1.Release(bg))
	require.ErrorIs(t, r3.Release(bg), ErrNotHeld)
	w, err := m.TryLock(bg, time.Minute)
	require.NoError(t, err, "a writer once every reader left")
	_, err = m.TryRLock(bg, time.Minute)
	require.ErrorIs(t, err, ErrHeldElsewhere, "a reader while written")
	_, err = m.TryLock(bg, time.Minute)
	require.ErrorIs(t, err, ErrHeldElsewhere, "a second writer")
	require.NoError(t, w.Release(bg))
}

// TestRWMutexDo: Do and RDo hold the lock while fn runs, and give fn the
// hold.
func TestRWMutexDo(t *testing.T) {
	fc := clock.NewFake(t0)
	c := testClient(t, fc, memoryServers(t, fc, 3))
	m := c.RWMutex("table")
	require.NoError(t, m.RDo(bg, time.Minute, func(ctx context.Context) error {
		_, ok := LockFromContext(ctx)
		assert.True(t, ok)
		_, err := m.TryLock(bg, time.Minute)
		assert.ErrorIs(t, err, ErrHeldElsewhere, "a writer inside RDo")
		l, err := m.TryRLock(bg, time.Minute)
		assert.NoError(t, err, "a reader inside RDo")
		return l.Release(bg)
	}))
	require.NoError(t, m.Do(bg, time.Minute, func(context.Context) error {
		_, err := m.TryRLock(bg, time.Minute)
		assert.ErrorIs(t, err, ErrHeldElsewhere, "a reader inside Do")
		return nil
	}))
}
