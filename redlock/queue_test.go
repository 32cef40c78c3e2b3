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

// TestQueueLetsOneWriterOfAClientTry: while another Client writes, five
// writers of one Client wait, and only one of them asks the servers; the
// others wait in the process, and each is granted in turn once the
// writer leaves.
func TestQueueLetsOneWriterOfAClientTry(t *testing.T) {
	fc := clock.NewFake(t0)
	servers := memoryServers(t, fc, 3)
	holder := testClient(t, fc, servers).RWMutex("table")
	var attempts atomic.Int64
	wc := testClient(t, fc, servers, WithRetryDelay(time.Minute), WithRetryCount(-1),
		WithHooks(Hooks{Attempt: func(context.Context, Attempt) { attempts.Add(1) }}))
	waiters := wc.RWMutex("table")
	l, err := holder.Lock(bg, time.Hour)
	require.NoError(t, err)
	// Each writer lets go as soon as it is granted, whichever comes first.
	done := make(chan error, 5)
	for range 5 {
		go func() {
			l, err := waiters.Lock(bg, time.Hour)
			if err == nil {
				err = l.Release(bg)
			}
			done <- err
		}()
	}
	// The one inside waits on the servers' watches, the four others in
	// the queue: five sleepers, and two attempts made (the refusal, and
	// the look again once the watch was set).
	_, err = fc.BlockUntilSleepers(5, wait)
	require.NoError(t, err)
	assert.Equal(t, 5, queuedCalls(wc, "{table}:rw"), "writers in the queue")
	time.Sleep(20 * time.Millisecond) // a sixth attempt would show now
	assert.EqualValues(t, 2, attempts.Load(), "attempts while one writer holds and five wait in one Client")
	require.NoError(t, l.Release(bg))
	// A writer woken by one server's release may find the others not
	// released yet and back off a moment: let time pass.
	deadline := time.After(wait)
	for n := 0; n < 5; {
		select {
		case err := <-done:
			require.NoError(t, err)
			n++
		case <-time.After(time.Millisecond):
			fc.Advance(10 * time.Millisecond)
		case <-deadline:
			t.Fatalf("%d of 5 writers granted within %v", n, wait)
		}
	}
}

// TestQueuePatience: a writer waiting in its Client's queue gives up after
// its patience (retries × delay with no call leaving), reporting the
// votes of the refusal that keeps the call ahead of it out.
func TestQueuePatience(t *testing.T) {
	fc := clock.NewFake(t0)
	servers := memoryServers(t, fc, 3)
	holder := testClient(t, fc, servers).RWMutex("table")
	waiters := testClient(t, fc, servers, WithRetryDelay(100*time.Millisecond), WithRetryCount(3), WithRetryJitter(0)).RWMutex("table")
	l, err := holder.Lock(bg, time.Hour)
	require.NoError(t, err)
	ahead := async(t, func() lockResult { l, err := waiters.Lock(bg, time.Hour); return lockResult{l, err} })
	_, err = fc.BlockUntilSleepers(1, wait)
	require.NoError(t, err)
	behind := async(t, func() lockResult { l, err := waiters.Lock(bg, time.Hour); return lockResult{l, err} })
	_, err = fc.BlockUntilSleepers(2, wait)
	require.NoError(t, err)
	for range 40 {
		fc.Advance(50 * time.Millisecond)
		time.Sleep(time.Millisecond)
	}
	for _, r := range []lockResult{ahead(), behind()} {
		assert.ErrorIs(t, r.err, ErrHeldElsewhere)
		assert.Nil(t, r.lock)
	}
	require.NoError(t, l.Release(bg))
}

// queuedCalls is how many calls of c are in key's queue.
func queuedCalls(c *Client, key string) int {
	v, ok := c.queues.Load(key)
	if !ok {
		return 0
	}
	q := v.(*queue)
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.calls)
}
