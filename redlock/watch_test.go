package redlock

import (
	"context"
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

// renewing is a memory server that runs during once, before setting a
// watch, from the watch call after the first after of all the servers
// sharing calls: a change while a waiter's watches are being renewed.
type renewing struct {
	*memory.Server
	calls  *atomic.Int32
	after  int32
	once   *sync.Once
	during func()
}

func (r renewing) WatchHolds(ctx context.Context, h keyserver.HoldSpec) (<-chan struct{}, func(), error) {
	if r.calls.Add(1) > r.after {
		r.once.Do(r.during) // the calls to the other servers wait for it too
	}
	return r.Server.WatchHolds(ctx, h)
}

// TestWaiterToldOfAReleaseWhileItRenewsItsWatches: a leader resigns while
// a campaigner renews the watches that have stood for renewEvery, before
// any new one is set: the campaigner leads at once, told by the watches it
// replaced, rather than sleeping out its retry delay.
func TestWaiterToldOfAReleaseWhileItRenewsItsWatches(t *testing.T) {
	fc := clock.NewFake(t0)
	servers := memoryServers(t, fc, 3)
	l, err := testClient(t, fc, servers).Election("primary").Campaign(bg, 10*time.Second, "first")
	require.NoError(t, err)

	var (
		calls    atomic.Int32
		once     sync.Once
		resigned = make(chan time.Time, 1)
	)
	renewed := make([]keyserver.KeyServer, len(servers))
	for i, s := range servers {
		// Its first watches are the first 3 calls, after its first refusal;
		// nothing changes until they are renewed for having stood too long.
		renewed[i] = renewing{Server: s.(*memory.Server), calls: &calls, after: 3, once: &once, during: func() {
			assert.NoError(t, l.Release(bg), "resigning")
			resigned <- fc.Now()
		}}
	}
	campaigned := make(chan error, 1)
	go func() {
		_, err := testClient(t, fc, renewed).Election("primary").Campaign(bg, 10*time.Second, "second")
		campaigned <- err
	}()
	// The clock moves past the campaigner's retry waits (not the leader's
	// keep-alive, which its TTL outlasts), so only while the campaigner is
	// asleep, until its renewal resigns the leader. Then it stands still: a
	// campaigner that missed the resignation sleeps out its retry wait for
	// good.
	for start := time.Now(); len(resigned) == 0; {
		require.Less(t, time.Since(start), wait, "the campaigner's watches were never renewed")
		if ds, err := fc.BlockUntilSleepers(1, time.Millisecond); err == nil && ds[0] < renewEvery && len(resigned) == 0 {
			fc.Advance(ds[0])
		}
	}
	at := <-resigned
	select {
	case err := <-campaigned:
		require.NoError(t, err)
	case <-time.After(wait):
		t.Fatal("the campaigner, asleep for its retry delay, missed the resignation")
	}
	assert.GreaterOrEqual(t, at.Sub(t0), renewEvery, "resigned as the first watches were renewed")
}
