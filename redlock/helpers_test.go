package redlock

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/goredlock/goredlock/internal/clock"
	"github.com/goredlock/goredlock/keyserver"
	"github.com/goredlock/goredlock/keyserver/memory"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var t0 = time.Unix(1_700_000_000, 0)

// wait bounds every real-time wait of a test on a goroutine, so that a bug
// fails the test instead of hanging it.
const wait = 10 * time.Second

// withClock replaces the client's clock; tests use a fake one.
func withClock(c clock.Clock) ClientOption {
	return clientOnly(func(o *options) { o.clock = c })
}

// testClient returns a client on fc; its background calls must have ended
// by the end of the test.
func testClient(t *testing.T, fc *clock.Fake, servers []keyserver.KeyServer, opts ...ClientOption) *Client {
	t.Helper()
	c, err := New(servers, append([]ClientOption{withClock(fc)}, opts...)...)
	require.NoError(t, err)
	t.Cleanup(func() {
		closed := async(t, func() error { return c.Close() })
		assert.NoError(t, closed(), "Close")
	})
	return c
}

// memoryServers returns n in-memory servers whose TTLs run on fc.
func memoryServers(t *testing.T, fc *clock.Fake, n int) []keyserver.KeyServer {
	ks := make([]keyserver.KeyServer, n)
	for i := range ks {
		s := memory.New(memory.WithNow(fc.Now), memory.WithSweepInterval(0))
		t.Cleanup(func() { s.Close() })
		ks[i] = s
	}
	return ks
}

// downServers returns n in-memory servers whose every call that takes or
// raises something fails with err, at once: servers down, in-process, so
// that a fan-out over them and memory servers runs on the caller's
// goroutine and fake time cannot outrun a call still out.
func downServers(t *testing.T, err error, n int) []keyserver.KeyServer {
	ks := memoryServers(t, clock.NewFake(t0), n)
	for i, s := range ks {
		ks[i] = down{s.(*memory.Server), err}
	}
	return ks
}

// down is a memory server that is down for every call that takes or
// raises something (see downServers); it releases and watches as it is.
type down struct {
	*memory.Server
	err error
}

func (d down) Acquire(context.Context, string, string, time.Duration) (bool, error) {
	return false, d.err
}

func (d down) AcquireOrHolder(context.Context, string, string, time.Duration) (bool, keyserver.Holder, error) {
	return false, keyserver.Holder{}, d.err
}

func (d down) AcquireInLine(context.Context, string, string, time.Duration, string) (bool, keyserver.Holder, error) {
	return false, keyserver.Holder{}, d.err
}

func (d down) AcquireFenced(context.Context, string, string, time.Duration) (bool, uint64, error) {
	return false, 0, d.err
}

func (d down) RaiseFence(context.Context, string, uint64) (uint64, error) { return 0, d.err }

// memoryClient returns a client of three in-memory servers on a fake
// clock, and the clock.
func memoryClient(t *testing.T, opts ...ClientOption) (*Client, *clock.Fake) {
	fc := clock.NewFake(t0)
	return testClient(t, fc, memoryServers(t, fc, 3), opts...), fc
}

// sleeps advances fc past the next n waits of the code under test, each as
// soon as it starts, and returns their lengths.
func sleeps(t *testing.T, fc *clock.Fake, n int) []time.Duration {
	t.Helper()
	var got []time.Duration
	for i := 0; i < n; i++ {
		ds, err := fc.BlockUntilSleepers(1, wait)
		require.NoError(t, err, "wait %d of %d never started", i+1, n)
		got = append(got, ds[0])
		fc.Advance(ds[0])
	}
	return got
}

// advanceBackOffs moves fc past every sleep shorter than below, until the
// test ends. A waiter whose attempt meets a release half done (granted by
// the servers it has reached, refused by the others) backs off for at
// most a quarter of its retry delay before it waits; a test of wakes moves
// the clock past such back-offs and never past the wait itself (below is
// shorter), so that its waiter returns only if it was woken.
func advanceBackOffs(t *testing.T, fc *clock.Fake, below time.Duration) {
	stop, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		for !closed(stop) {
			if ds, err := fc.BlockUntilSleepers(1, 10*time.Millisecond); err == nil && ds[0] < below {
				fc.Advance(ds[0])
			}
		}
	}()
	t.Cleanup(func() { close(stop); <-stopped })
}

// async runs f in a goroutine and returns a function that waits for its
// result, failing the test if it takes longer than wait.
func async[T any](t *testing.T, f func() T) func() T {
	ch := make(chan T, 1)
	go func() { ch <- f() }()
	return func() T {
		t.Helper()
		select {
		case v := <-ch:
			return v
		case <-time.After(wait):
			t.Fatalf("call did not return within %v", wait)
			panic("unreachable")
		}
	}
}

type lockResult struct {
	lock *Lock
	err  error
}

var bg = context.Background()

// newTestLogger returns a text logger that writes into buf under mu.
func newTestLogger(mu *sync.Mutex, buf *strings.Builder) *slog.Logger {
	return slog.New(slog.NewTextHandler(lockedWriter{mu, buf}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type lockedWriter struct {
	mu  *sync.Mutex
	buf *strings.Builder
}

func (w lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.Write(p)
}

// advanceUntil moves fc past every wait of the code under test until done
// is closed.
func advanceUntil(t *testing.T, fc *clock.Fake, done <-chan struct{}) {
	t.Helper()
	deadline := time.Now().Add(wait)
	for !closed(done) {
		if time.Now().After(deadline) {
			t.Fatalf("not done after %v of advancing the clock (at %v)", wait, fc.Now().Sub(t0))
		}
		if ds, err := fc.BlockUntilSleepers(1, 20*time.Millisecond); err == nil {
			fc.Advance(ds[0])
		}
	}
}

// advanceTimersUntil is advanceUntil for code that also waits on timers and
// deadlines: once at least n timers of any kind are pending, it moves fc to
// the soonest, until done is closed.
func advanceTimersUntil(t *testing.T, fc *clock.Fake, n int, done <-chan struct{}) {
	t.Helper()
	advanceTimersTo(t, fc, n, done, time.Time{})
}

// advanceTimersTo is advanceTimersUntil that never moves fc past limit
// (zero: no limit), for a test that reads the clock when done closes: a
// timer's function runs in a goroutine of its own, and the stepping would
// otherwise move on before it has run.
func advanceTimersTo(t *testing.T, fc *clock.Fake, n int, done <-chan struct{}, limit time.Time) {
	t.Helper()
	deadline := time.Now().Add(wait)
	for !closed(done) {
		if time.Now().After(deadline) {
			t.Fatalf("not done after %v of advancing the clock (at %v)", wait, fc.Now().Sub(t0))
		}
		if ds, err := fc.BlockUntilWaiters(n, 20*time.Millisecond); err == nil {
			step := ds[0]
			if !limit.IsZero() {
				step = min(step, limit.Sub(fc.Now()))
			}
			if step > 0 {
				fc.Advance(step)
			}
		}
	}
}
