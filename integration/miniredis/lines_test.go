package miniredis_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goredlock/goredlock/redlock"
)

// patient is a waiter's option: a retry delay of a minute, so that a
// waiter granted within seconds was woken by the release (the line's
// promise, over Pub/Sub), not by polling.
var patient = redlock.WithRetryDelay(time.Minute)

// refusals returns hooks that send on the channel each time a call's first
// attempt is refused: the call then waits in line.
func refusals() (redlock.Hooks, chan struct{}) {
	refused := make(chan struct{}, 16)
	return redlock.Hooks{Attempt: func(_ context.Context, a redlock.Attempt) {
		if a.Number == 1 && !a.OK {
			refused <- struct{}{}
		}
	}}, refused
}

// waitRefused waits for n first refusals.
func waitRefused(t *testing.T, refused chan struct{}, n int) {
	t.Helper()
	for range n {
		select {
		case <-refused:
		case <-time.After(10 * time.Second):
			t.Fatal("a waiter's first attempt never came back refused")
		}
	}
}

// TestWaitersServedInCallOrder: three waiters in three clients whose calls
// began 15 ms apart are handed the lock in that order, each within
// seconds of the release before it although their retry delay is a minute.
func TestWaitersServedInCallOrder(t *testing.T) {
	mrs := start(t, 3)
	holder := clientOn(t, mrs)
	hooks, refused := refusals()
	for round := range 3 {
		name := fmt.Sprint("order-", round)
		l, err := holder.Acquire(bg, name, 10*time.Second)
		require.NoError(t, err)
		var (
			mu    sync.Mutex
			order []int
			wg    sync.WaitGroup
		)
		ctx, cancel := context.WithTimeout(bg, 20*time.Second)
		defer cancel()
		for i := range 3 {
			c := clientOn(t, mrs, patient, redlock.WithHooks(hooks))
			wg.Add(1)
			go func() {
				defer wg.Done()
				w, err := c.Acquire(ctx, name, 10*time.Second)
				if !assert.NoError(t, err, "waiter %d", i) {
					return
				}
				mu.Lock()
				order = append(order, i)
				mu.Unlock()
				assert.NoError(t, w.Release(bg))
			}()
			time.Sleep(15 * time.Millisecond)
		}
		waitRefused(t, refused, 3)
		began := time.Now()
		require.NoError(t, l.Release(bg))
		wg.Wait()
		t.Logf("round %d: three hand-overs in %v", round, time.Since(began))
		assert.Equal(t, []int{0, 1, 2}, order, "round %d: the order of the grants", round)
	}
}

// handedOver starts acquire in a goroutine of its own once hold is held,
// waits until its first attempt was refused, calls release and returns
// how long acquire took after it; it fails the test if acquire fails or
// takes 10 s or more (its retry delay is a minute: only a wake-up grants
// it that soon).
func handedOver(t *testing.T, refused chan struct{}, acquire func(ctx context.Context) (*redlock.Lock, error), release func() error) time.Duration {
	t.Helper()
	ctx, cancel := context.WithTimeout(bg, 10*time.Second)
	defer cancel()
	type result struct {
		l   *redlock.Lock
		err error
	}
	done := make(chan result, 1)
	go func() {
		l, err := acquire(ctx)
		done <- result{l, err}
	}()
	waitRefused(t, refused, 1)
	began := time.Now()
	require.NoError(t, release())
	r := <-done
	require.NoError(t, r.err, "the waiter after the release")
	took := time.Since(began)
	require.NoError(t, r.l.Release(bg))
	return took
}

func TestAcquireAllWaitsInLine(t *testing.T) {
	mrs := start(t, 3)
	a := clientOn(t, mrs)
	hooks, refused := refusals()
	b := clientOn(t, mrs, patient, redlock.WithHooks(hooks))
	l, err := a.Acquire(bg, "y", 10*time.Second)
	require.NoError(t, err)
	took := handedOver(t, refused, func(ctx context.Context) (*redlock.Lock, error) {
		return b.AcquireAll(ctx, []string{"x", "y"}, 10*time.Second)
	}, func() error { return l.Release(bg) })
	t.Logf("a set waiting for one of its names: granted %v after the release", took)
}

func TestSemaphoreWaiterWokenByRelease(t *testing.T) {
	mrs := start(t, 3)
	a := clientOn(t, mrs)
	hooks, refused := refusals()
	b := clientOn(t, mrs, patient, redlock.WithHooks(hooks))
	p, err := a.Semaphore("encoder", 1).Acquire(bg, 10*time.Second)
	require.NoError(t, err)
	took := handedOver(t, refused, func(ctx context.Context) (*redlock.Lock, error) {
		return b.Semaphore("encoder", 1).Acquire(ctx, 10*time.Second)
	}, func() error { return p.Release(bg) })
	t.Logf("a waiter for the only permit: granted %v after the release", took)
}

func TestWriterWaitsForReader(t *testing.T) {
	mrs := start(t, 3)
	a := clientOn(t, mrs)
	hooks, refused := refusals()
	b := clientOn(t, mrs, patient, redlock.WithHooks(hooks))
	r, err := a.RWMutex("catalog").RLock(bg, 10*time.Second)
	require.NoError(t, err)
	took := handedOver(t, refused, func(ctx context.Context) (*redlock.Lock, error) {
		return b.RWMutex("catalog").Lock(ctx, 10*time.Second)
	}, func() error { return r.Release(bg) })
	t.Logf("a writer waiting for a reader: granted %v after the release", took)
}

func TestCandidateWaitsForResignation(t *testing.T) {
	mrs := start(t, 3)
	a := clientOn(t, mrs)
	hooks, refused := refusals()
	b := clientOn(t, mrs, patient, redlock.WithHooks(hooks))
	lead, err := a.Election("scheduler").Campaign(bg, 10*time.Second, "host-a")
	require.NoError(t, err)
	took := handedOver(t, refused, func(ctx context.Context) (*redlock.Lock, error) {
		return b.Election("scheduler").Campaign(ctx, 10*time.Second, "host-b", redlock.WithRetryCount(10))
	}, func() error { return lead.Release(bg) })
	t.Logf("a candidate waiting for the leader to resign: leads %v after", took)
}
