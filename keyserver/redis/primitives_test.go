package redis_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goredlock/goredlock/internal/redistest"
	"github.com/goredlock/goredlock/internal/testkit"
	"github.com/goredlock/goredlock/keyserver"
)

// TestWaiterGivingBackKeepsItsPlace: a waiter whose attempt won a
// primitive here but no quorum elsewhere gives it back while it still
// waits; the freed hold is promised to it again, not to the watcher
// behind it (which, once two servers did so, overtook it: 1 round in
// about 100 of the semaphore order test under load). For a permit and a
// write hold.
func TestWaiterGivingBackKeepsItsPlace(t *testing.T) {
	s := fromURL(t, redistest.Start(t, 1).Nodes[0].URL(""))
	for name, kind := range map[string]keyserver.HoldKind{"permit": keyserver.PermitHold, "write": keyserver.WriteHold} {
		t.Run(name, func(t *testing.T) {
			key := "{gives-back-" + name + "}"
			spec := func(token string) keyserver.HoldSpec {
				h := keyserver.HoldSpec{Kind: kind, Key: key, Token: token}
				if kind == keyserver.PermitHold {
					h.Permits = 1
				}
				return h
			}
			holder, early, late := spec(testkit.Ranked(1, 0)), spec(testkit.Ranked(2, 0)), spec(testkit.Ranked(3, 0))
			ok, _, err := s.AcquireHold(bg, holder, time.Minute)
			require.NoError(t, err)
			require.True(t, ok)
			for _, w := range []keyserver.HoldSpec{early, late} {
				ok, _, err := s.AcquireHold(bg, w, time.Minute)
				require.NoError(t, err)
				require.False(t, ok, "held")
			}
			turn, stopEarly, err := s.WatchHolds(bg, early)
			require.NoError(t, err)
			defer stopEarly()
			_, stopLate, err := s.WatchHolds(bg, late)
			require.NoError(t, err)
			defer stopLate()

			_, err = s.ReleaseHold(bg, holder)
			require.NoError(t, err)
			select {
			case <-turn:
			case <-time.After(5 * time.Second):
				t.Fatal("the earliest watcher was not told")
			}
			ok, _, err = s.AcquireHold(bg, early, time.Minute)
			require.NoError(t, err)
			require.True(t, ok, "the earliest watcher claims its promise")
			given := early
			given.InLine = true
			ok, err = s.ReleaseHold(bg, given) // no quorum elsewhere: given back, still waiting
			require.NoError(t, err)
			require.True(t, ok)

			ok, _, err = s.AcquireHold(bg, late, time.Minute)
			require.NoError(t, err)
			assert.False(t, ok, "the later watcher overtook the earlier, which gave back what it won and waits on")
			ok, _, err = s.AcquireHold(bg, early, time.Minute)
			require.NoError(t, err)
			assert.True(t, ok, "the earlier watcher keeps its place")
		})
	}
}

// TestWatchersAreOrderedByRank: a primitive's watchers are in the order
// their calls began (their ranks), as a lock's line is, not the order
// they watched: on two Servers (two processes) of one node, the call that
// began first but watched last is the one a release tells.
func TestWatchersAreOrderedByRank(t *testing.T) {
	node := redistest.Start(t, 1).Nodes[0]
	a, b := fromURL(t, node.URL("")), fromURL(t, node.URL(""))
	permit := func(token string) keyserver.HoldSpec {
		return keyserver.HoldSpec{Kind: keyserver.PermitHold, Key: "{ordered-by-rank}", Token: token, Permits: 1}
	}
	holder, early, late := permit(testkit.Ranked(1, 0)), permit(testkit.Ranked(2, 0)), permit(testkit.Ranked(50, 0))
	ok, _, err := a.AcquireHold(bg, holder, time.Minute)
	require.NoError(t, err)
	require.True(t, ok)
	lateTurn, stop, err := a.WatchHolds(bg, late)
	require.NoError(t, err)
	defer stop()
	earlyTurn, stop, err := b.WatchHolds(bg, early)
	require.NoError(t, err)
	defer stop()
	_, err = a.ReleaseHold(bg, holder)
	require.NoError(t, err)
	select {
	case <-earlyTurn:
	case <-time.After(5 * time.Second):
		t.Fatal("the call that began first was not told")
	}
	select {
	case <-lateTurn:
		t.Fatal("the call that began later was told: one freed slot, one waiter told")
	default:
	}
	ok, _, err = a.AcquireHold(bg, late, time.Minute)
	require.NoError(t, err)
	assert.False(t, ok, "the slot is promised to the call that began first")
}
