package redlock

import (
	"context"
	"errors"
	"github.com/goredlock/goredlock/internal/startcall"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goredlock/goredlock/internal/clock"
	"github.com/goredlock/goredlock/keyserver"
	"github.com/goredlock/goredlock/keyserver/memory"
)

// The test servers below start calls by a method of their own, which
// the client finds as it finds a Redis server's (startcall.Of).
func init() {
	startcall.Register(func(ks keyserver.KeyServer) startcall.Starter {
		st, _ := ks.(startcall.Starter)
		return st
	})
}

// starter is a startcall.Starter over an in-process store, as a pipelined
// Redis is one: a started call reaches the store at once, in the order
// calls were made, and its answer comes later from a goroutine of the
// server's, or, while held, when the test lets it.
type starter struct {
	store *memory.Server

	mu      sync.Mutex
	hold    bool
	held    []heldAnswer
	started atomic.Int32 // calls started
	blocked atomic.Int32 // calls made with the blocking methods
}

type heldAnswer struct {
	to startcall.Completion
	a  startcall.Answer
}

// starters returns n starters whose TTLs run on fc.
func newStarters(t *testing.T, fc *clock.Fake, n int) ([]*starter, []keyserver.KeyServer) {
	ss := make([]*starter, n)
	ks := make([]keyserver.KeyServer, n)
	for i, s := range memoryServers(t, fc, n) {
		ss[i] = &starter{store: s.(*memory.Server)}
		ks[i] = ss[i]
	}
	return ss, ks
}

func (s *starter) Acquire(ctx context.Context, key, token string, ttl time.Duration) (bool, error) {
	s.blocked.Add(1)
	return s.store.Acquire(ctx, key, token, ttl)
}

func (s *starter) Extend(ctx context.Context, key, token string, ttl time.Duration) (bool, error) {
	s.blocked.Add(1)
	return s.store.Extend(ctx, key, token, ttl)
}

func (s *starter) Release(ctx context.Context, key, token string) (bool, error) {
	s.blocked.Add(1)
	return s.store.Release(ctx, key, token)
}

func (s *starter) Start(ctx context.Context, c startcall.Call, to startcall.Completion) bool {
	s.started.Add(1)
	var a startcall.Answer
	switch c.Op {
	case startcall.CallAcquire:
		a.OK, a.Err = s.store.Acquire(ctx, c.Key, c.Token, c.TTL)
	case startcall.CallExtend:
		a.OK, a.Err = s.store.Extend(ctx, c.Key, c.Token, c.TTL)
	case startcall.CallRelease:
		a.OK, a.Err = s.store.Release(ctx, c.Key, c.Token)
	default:
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.hold {
		s.held = append(s.held, heldAnswer{to, a})
		return true
	}
	go to.Complete(a)
	return true
}

// holdAnswers holds the answers of the calls started from now on.
func (s *starter) holdAnswers() {
	s.mu.Lock()
	s.hold = true
	s.mu.Unlock()
}

// takeHeld returns the answers held so far, and holds no more.
func (s *starter) takeHeld() []heldAnswer {
	s.mu.Lock()
	defer s.mu.Unlock()
	h := s.held
	s.held, s.hold = nil, false
	return h
}

// TestFanOutStartsCallsOnStarters: a lock's acquire, extend and release
// are started on servers that can start them, with no blocking call.
func TestFanOutStartsCallsOnStarters(t *testing.T) {
	fc := clock.NewFake(t0)
	ss, ks := newStarters(t, fc, 3)
	c := testClient(t, fc, ks)
	l, err := c.Acquire(bg, "job", time.Minute)
	require.NoError(t, err)
	require.NoError(t, l.Extend(bg, time.Minute))
	require.NoError(t, l.Release(bg))
	require.NoError(t, c.Close())
	for i, s := range ss {
		assert.Equal(t, int32(3), s.started.Load(), "server %d: calls started", i)
		assert.Zero(t, s.blocked.Load(), "server %d: blocking calls", i)
		assert.Zero(t, s.store.Len(), "server %d: keys left", i)
	}
}

// TestStartedCallsLateAreCountedAtTheDeadlineAndUndone: two of three
// servers do not answer; at the server timeout the attempt fails with
// their calls counted as late, the keys their calls set are released
// (after the calls, which reached the stores), and their answers, when
// they come, are dropped.
func TestStartedCallsLateAreCountedAtTheDeadlineAndUndone(t *testing.T) {
	fc := clock.NewFake(t0)
	ss, ks := newStarters(t, fc, 3)
	var failed atomic.Int32
	hooks := Hooks{ServerFailed: func(_ context.Context, op, _ string, _ int, err error) {
		if op == "acquire" && errors.Is(err, context.DeadlineExceeded) {
			failed.Add(1)
		}
	}}
	c := testClient(t, fc, ks, WithRetryCount(0), WithServerTimeout(100*time.Millisecond), WithHooks(hooks))
	for _, s := range ss {
		s.holdAnswers()
	}
	got := async(t, func() error { _, err := c.Acquire(bg, "job", time.Minute); return err })
	first := heldOf(t, ss[0])
	first.to.Complete(first.a) // server 0 grants; 1 and 2 say nothing
	heldOf(t, ss[1])
	heldOf(t, ss[2])
	fc.Advance(100 * time.Millisecond) // the fan-out's deadline
	err := got()
	require.ErrorIs(t, err, ErrNotAcquired)
	var qe *QuorumError
	require.ErrorAs(t, err, &qe)
	assert.Equal(t, 1, qe.Granted)
	assert.Len(t, qe.Failed, 2)
	assert.Equal(t, int32(2), failed.Load(), "late calls reported to the hook")
	for _, s := range ss[1:] {
		for _, h := range s.takeHeld() {
			h.to.Complete(h.a) // late: dropped
		}
	}
	require.NoError(t, c.Close()) // waits for the undo of the late calls
	for i, s := range ss {
		assert.Zero(t, s.store.Len(), "server %d: the attempt's key was undone", i)
	}
}

// heldOf waits until s holds the answer of a started call, and returns it.
func heldOf(t *testing.T, s *starter) heldAnswer {
	t.Helper()
	var h heldAnswer
	require.Eventually(t, func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		if len(s.held) == 0 {
			return false
		}
		h = s.held[0]
		return true
	}, wait, time.Millisecond, "no call was started")
	return h
}

// TestStartedCallsEndWithTheCallersContext: a caller whose context ends
// stops waiting for started calls that have not answered, without the
// server timeout passing.
func TestStartedCallsEndWithTheCallersContext(t *testing.T) {
	fc := clock.NewFake(t0)
	ss, ks := newStarters(t, fc, 3)
	c := testClient(t, fc, ks, WithRetryCount(0))
	for _, s := range ss {
		s.holdAnswers()
	}
	ctx, cancel := context.WithCancel(bg)
	got := async(t, func() error { _, err := c.Acquire(ctx, "job", time.Minute); return err })
	for _, s := range ss {
		heldOf(t, s)
	}
	cancel()
	err := got()
	require.ErrorIs(t, err, context.Canceled)
	require.ErrorIs(t, err, ErrNotAcquired)
	require.NoError(t, c.Close())
	for i, s := range ss {
		assert.Len(t, s.takeHeld(), 1, "server %d", i)
		assert.Zero(t, s.store.Len(), "server %d: the attempt's key was undone", i)
	}
}

// TestReleaseOvertakesAStartedStraggler: a Release made while the
// acquire's call to a server has not answered is started at once behind
// it, and the straggler is told to send nothing more.
func TestReleaseOvertakesAStartedStraggler(t *testing.T) {
	fc := clock.NewFake(t0)
	ss, ks := newStarters(t, fc, 3)
	c := testClient(t, fc, ks)
	ss[2].holdAnswers()
	l, err := c.Acquire(bg, "job", time.Minute)
	require.NoError(t, err)
	held := ss[2].takeHeld() // the straggler; the Release's answer comes at once
	require.Len(t, held, 1)
	require.NoError(t, l.Release(bg))
	assert.Equal(t, int32(2), ss[2].started.Load(), "the Release was started before the acquire's call answered")
	assert.False(t, held[0].to.Continue(), "the straggler goes on after the Release overtook it")
	require.NoError(t, c.Close())
	for i, s := range ss {
		assert.Zero(t, s.store.Len(), "server %d", i)
	}
}

// TestFailedAttemptSendsNothingMore: a started call whose SET NX was
// refused, asked to go on with its script after its attempt failed, says
// no: the script could only grant the key after the caller returned, for
// the undo to take back, refusing others meanwhile.
func TestFailedAttemptSendsNothingMore(t *testing.T) {
	fc := clock.NewFake(t0)
	ss, ks := newStarters(t, fc, 3)
	c := testClient(t, fc, ks)
	for _, s := range ss[1:] {
		ok, err := s.store.Acquire(bg, "job", "other", time.Minute)
		require.NoError(t, err)
		require.True(t, ok)
	}
	ss[0].holdAnswers()
	_, err := c.TryAcquire(bg, "job", time.Minute)
	require.ErrorIs(t, err, ErrHeldElsewhere)
	held := ss[0].takeHeld()
	require.Len(t, held, 1)
	if !assert.False(t, held[0].to.Continue(), "the call of a failed attempt goes on") {
		held[0].to.Complete(startcall.Answer{}) // so that Close returns
	}
	require.NoError(t, c.Close(), "the call ended when it said no")
}

// TestStartedRefusalIsNotUndone: a failed attempt releases its token where
// a started call granted it, not where one was refused (it stored nothing).
func TestStartedRefusalIsNotUndone(t *testing.T) {
	fc := clock.NewFake(t0)
	ss, ks := newStarters(t, fc, 3)
	c := testClient(t, fc, ks, WithRetryCount(0))
	for _, s := range ss[1:] {
		ok, err := s.store.Acquire(bg, "job", "other", time.Minute)
		require.NoError(t, err)
		require.True(t, ok)
	}
	_, err := c.Acquire(bg, "job", time.Minute)
	require.ErrorIs(t, err, ErrNotAcquired)
	require.NoError(t, c.Close())
	assert.Equal(t, int32(1), ss[0].blocked.Load(), "server 0 granted: its undo")
	for i, s := range ss[1:] {
		assert.Zero(t, s.blocked.Load(), "server %d refused: nothing to undo", i+1)
	}
	assert.Zero(t, ss[0].store.Len(), "server 0's grant undone")
}

// declinesLate is a starter whose first Start declines the call only once
// the test lets it, as a Redis key server whose connection went while
// Start was queueing the call on it.
type declinesLate struct {
	*starter
	once     sync.Once
	entered  chan struct{}
	decline  chan struct{}
	acquires atomic.Int32 // made with the blocking method
}

func (d *declinesLate) Acquire(ctx context.Context, key, token string, ttl time.Duration) (bool, error) {
	d.acquires.Add(1)
	return d.starter.Acquire(ctx, key, token, ttl)
}

func (d *declinesLate) Start(ctx context.Context, c startcall.Call, to startcall.Completion) bool {
	first := false
	d.once.Do(func() { first = true })
	if !first {
		return d.starter.Start(ctx, c, to)
	}
	close(d.entered)
	<-d.decline
	return false
}

// TestStartDeclinedAfterTheDeadline: a server whose Start declines a call
// only after the fan-out's deadline has passed (a busy machine, a
// connection lost meanwhile) has that call counted once, as late: it is
// not made again with the blocking method, and Close's count of the calls
// left running stays whole (the call was finished twice, and the count
// went negative: found by the chaos suite on a loaded machine).
func TestStartDeclinedAfterTheDeadline(t *testing.T) {
	fc := clock.NewFake(t0)
	ss, ks := newStarters(t, fc, 3)
	slow := &declinesLate{starter: ss[2], entered: make(chan struct{}), decline: make(chan struct{})}
	ks[2] = slow
	late := make(chan struct{})
	var once sync.Once
	hooks := Hooks{ServerFailed: func(_ context.Context, op, _ string, server int, err error) {
		if op == "acquire" && server == 2 && errors.Is(err, context.DeadlineExceeded) {
			once.Do(func() { close(late) })
		}
	}}
	// One attempt: the other two servers' answers may come before the
	// deadline (granted) or after it (late too, and refused); either way
	// the call ends without a retry the fake clock would have to wait for.
	c := testClient(t, fc, ks, WithServerTimeout(100*time.Millisecond), WithHooks(hooks), WithRetryCount(0))
	got := async(t, func() lockResult { l, err := c.Acquire(bg, "job", time.Minute); return lockResult{l, err} })
	<-slow.entered
	ds, err := fc.BlockUntilWaiters(1, wait) // the fan-out's deadline
	require.NoError(t, err)
	fc.Advance(ds[0])
	select {
	case <-late:
	case <-time.After(wait):
		t.Fatal("the call Start still held was not counted late at the deadline")
	}
	close(slow.decline)
	if r := got(); r.err == nil {
		require.NoError(t, r.lock.Release(bg))
	} else {
		var qe *QuorumError
		require.ErrorAs(t, r.err, &qe)
		require.NotEmpty(t, qe.Failed)
		for _, se := range qe.Failed {
			require.ErrorIs(t, se, context.DeadlineExceeded, "refused only by lateness")
		}
	}
	require.NoError(t, c.Close())
	assert.Zero(t, slow.acquires.Load(), "the call counted late was made again with the blocking method")
}
