package redlock

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goredlock/goredlock/internal/clock"
	"github.com/goredlock/goredlock/keyserver/static"
)

// TestNoHalfHeldSet: servers that fail after storing a set, or part of
// it (between its keys), leave no key of it behind: a failed call undoes
// its attempt on every server it called, and a granted set's release
// reaches the servers that failed its acquisition too.
func TestNoHalfHeldSet(t *testing.T) {
	names := []string{"a", "b", "c"}
	lost := errors.New("connection reset after the script ran")
	stored := func(keys int) static.Reply { return static.Reply{Store: true, Err: lost, Keys: keys} }
	for _, tc := range []struct {
		name    string
		faults  []static.Reply // of the first servers of five; the others answer from their stores
		fenced  bool
		granted bool
	}{
		{name: "refused, each failing server between other keys", faults: []static.Reply{stored(1), stored(2), stored(0)}},
		{name: "refused, every failing server after the first key", faults: []static.Reply{stored(1), stored(1), stored(1), stored(1)}},
		{name: "refused, fenced", faults: []static.Reply{stored(2), stored(1), stored(0)}, fenced: true},
		{name: "granted by a quorum, then released", faults: []static.Reply{stored(1), stored(2)}, granted: true},
		{name: "granted by a quorum, fenced", faults: []static.Reply{stored(2), stored(0)}, granted: true, fenced: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fc := clock.NewFake(t0)
			servers := static.NewCluster(5)
			for i, r := range tc.faults {
				servers[i].Script(static.OpAcquire, r)
			}
			var opts []ClientOption
			if tc.fenced {
				opts = append(opts, WithFencing())
			}
			c, err := New(servers.KeyServers(), append([]ClientOption{withClock(fc)}, opts...)...)
			require.NoError(t, err)
			set, err := c.TryAcquireAll(bg, names, ttl3)
			if tc.granted {
				require.NoError(t, err)
				require.NoError(t, set.Release(bg))
			} else {
				require.ErrorIs(t, err, ErrNotAcquired)
				var qe *QuorumError
				require.ErrorAs(t, err, &qe)
				// Decided once no quorum was left: 3 failures of 5.
				assert.GreaterOrEqual(t, len(qe.Failed), 3)
			}
			// Close waits for the clean-ups the call left running.
			require.NoError(t, c.Close())

			for i, s := range servers {
				s.Script(static.OpAcquire) // from the store again
				acquires := 0
				for _, call := range s.Calls() {
					if call.Op == static.OpAcquire {
						acquires++
					}
				}
				require.Positive(t, acquires, "server %d was called", i)
				for _, n := range names {
					ok, err := s.Acquire(bg, n, "probe", ttl3)
					require.NoError(t, err)
					assert.True(t, ok, "server %d still holds %q after the set's call failed on %d servers", i, n, len(tc.faults))
				}
			}
		})
	}
}
