package redlock

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goredlock/goredlock/internal/clock"
	"github.com/goredlock/goredlock/keyserver/static"
)

// risks records the AtRisk hook's reports.
type risks struct {
	mu   sync.Mutex
	left []time.Duration
}

func (r *risks) hooks() Hooks {
	return Hooks{AtRisk: func(_ context.Context, _ string, left time.Duration) {
		r.mu.Lock()
		r.left = append(r.left, left)
		r.mu.Unlock()
	}}
}

func (r *risks) reports() []time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]time.Duration(nil), r.left...)
}

// TestLockAtRiskWhenValidityRunsLow: a lock nobody extends is at risk
// once less than a third of its TTL is left, held again after an
// extension, and lost at the loss margin, at risk first.
func TestLockAtRiskWhenValidityRunsLow(t *testing.T) {
	fc := clock.NewFake(t0)
	var r risks
	c := testClient(t, fc, static.NewCluster(3).KeyServers(), WithHooks(r.hooks()))
	l, err := c.TryAcquire(bg, "job", ttl3)
	require.NoError(t, err)
	atRisk := l.AtRisk()
	assert.Equal(t, Held, l.Health())
	assert.False(t, closed(atRisk))

	// until is t0 + 2.968s: at risk from t0 + 1.968s.
	fc.Advance(1960 * time.Millisecond)
	assert.Equal(t, Held, l.Health())
	assert.False(t, closed(atRisk))
	fc.Advance(10 * time.Millisecond)
	<-atRisk // the timer's, on its own goroutine
	assert.Equal(t, AtRisk, l.Health())
	assert.Equal(t, []time.Duration{time.Second - 2*time.Millisecond}, r.reports(), "the hook hears it once, with the validity left")

	require.NoError(t, l.Extend(bg, ttl3))
	assert.Equal(t, Held, l.Health(), "a good extension ends the risk")
	again := l.AtRisk()
	assert.False(t, closed(again), "re-armed after the extension")
	assert.True(t, closed(atRisk), "the old channel stays closed")

	fc.Advance(2 * time.Second)
	<-again
	assert.Equal(t, AtRisk, l.Health())
	fc.Advance(time.Second)
	assert.Equal(t, Lost, l.Health())
	require.ErrorIs(t, l.Err(), ErrLockLost)
	assert.Len(t, r.reports(), 2, "at risk twice, before each extension and before the loss")
}

// TestLockAtRiskWhenARoundFails: a keep-alive round that fails to reach a
// quorum puts the lock at risk at once; the next good round holds it
// again.
func TestLockAtRiskWhenARoundFails(t *testing.T) {
	fc := clock.NewFake(t0)
	servers := static.NewCluster(3)
	c := testClient(t, fc, servers.KeyServers())
	down := errors.New("connection refused")
	var mu sync.Mutex
	var healths []Health
	err := c.Do(bg, "job", ttl3, func(ctx context.Context) error {
		l, ok := LockFromContext(ctx)
		require.True(t, ok)
		atRisk := l.AtRisk()
		servers[0].Script(static.OpExtend, static.Fail(down))
		servers[1].Script(static.OpExtend, static.Fail(down))
		seen := make(chan struct{})
		go func() {
			<-atRisk
			mu.Lock()
			healths = append(healths, l.Health())
			mu.Unlock()
			close(seen)
		}()
		advanceUntil(t, fc, seen)
		assert.Less(t, fc.Now().Sub(t0), 1968*time.Millisecond, "at risk at the failed round, before validity ran low")
		assert.Equal(t, AtRisk, l.Health())

		servers[0].Script(static.OpExtend, static.FromStore)
		servers[1].Script(static.OpExtend, static.FromStore)
		held := make(chan struct{})
		go func() {
			for l.Health() != Held {
				time.Sleep(time.Millisecond)
			}
			close(held)
		}()
		advanceUntil(t, fc, held)
		assert.False(t, closed(l.AtRisk()), "a recovered round re-arms the channel")
		return nil
	})
	require.NoError(t, err)
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, []Health{AtRisk}, healths)
}

// TestAtRiskClosesWhenTheLockEnds: a released or nil lock does not keep a
// listener waiting.
func TestAtRiskClosesWhenTheLockEnds(t *testing.T) {
	fc := clock.NewFake(t0)
	c := testClient(t, fc, static.NewCluster(3).KeyServers())
	l, err := c.TryAcquire(bg, "job", ttl3)
	require.NoError(t, err)
	atRisk := l.AtRisk()
	require.NoError(t, l.Release(bg))
	assert.True(t, closed(atRisk))
	assert.Equal(t, Lost, l.Health())
	var none *Lock
	assert.True(t, closed(none.AtRisk()))
	assert.Equal(t, Lost, none.Health())
	assert.Equal(t, "at risk", AtRisk.String())
}
