package redis

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// TestGiveBackBookkeeping: whether a call still among a primitive's
// watchers leaves them when its last watch stops, around give-backs
// (rejoin) and acquires in flight. Redis may run a give-back after a
// grant of the call's next attempt, which took the call out: then it is
// back among the watchers, and must leave at its last stop.
func TestGiveBackBookkeeping(t *testing.T) {
	const key, p = "{k}", "promise"
	watching := func() (*subscriber, *turnWatch) {
		s := &subscriber{watches: map[watchKey]map[*turnWatch]struct{}{}, watched: map[string]time.Time{}}
		w := &turnWatch{at: watchKey{key, p}}
		s.watches[w.at] = map[*turnWatch]struct{}{w: {}}
		return s, w
	}
	t.Run("granted, then stopped: out already, no leave", func(t *testing.T) {
		s, w := watching()
		s.acquire(key, p)
		assert.False(t, s.acquired(key, p, true))
		assert.False(t, s.stop(w))
	})
	t.Run("given back, then stopped: back among them, leaves", func(t *testing.T) {
		s, w := watching()
		s.acquire(key, p)
		s.acquired(key, p, true)
		assert.True(t, s.rejoin(key, p))
		assert.False(t, s.rejoined(key, p))
		assert.True(t, s.stop(w))
	})
	t.Run("stopped while the give-back runs: it leaves after", func(t *testing.T) {
		s, w := watching()
		assert.True(t, s.rejoin(key, p))
		assert.False(t, s.stop(w), "the give-back's answer decides")
		assert.True(t, s.rejoined(key, p))
	})
	t.Run("a grant answered while a give-back runs: leaves at the last stop", func(t *testing.T) {
		s, w := watching()
		assert.True(t, s.rejoin(key, p))
		s.acquire(key, p)
		assert.False(t, s.acquired(key, p, true))
		assert.False(t, s.rejoined(key, p))
		assert.True(t, s.stop(w), "the give-back may have put it back after the grant")
	})
	t.Run("no watch: no give-back", func(t *testing.T) {
		s, w := watching()
		s.stop(w)
		assert.False(t, s.rejoin(key, p))
	})
}
