package miniredis_test

import (
	"sync"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"

	"github.com/goredlock/goredlock/internal/startcall/startcalltest"
	"github.com/goredlock/goredlock/keyserver"
	"github.com/goredlock/goredlock/keyserver/keyservertest"
)

// TestConformance runs the key server conformance suite (the one every
// key server of the core module passes) on one miniredis whose clock is
// fake: where the suite would wait for time to pass, it moves both of
// miniredis's clocks, the one its TTLs run on (FastForward) and the one
// TIME reads (SetTime), which the scripts of the primitives' holds store
// their expiries by. The checks of the started calls (startcalltest, the
// core module's own protocol) run on it too, as they do on a Redis.
func TestConformance(t *testing.T) {
	mr := miniredis.RunT(t)
	now := time.Now()
	mr.SetTime(now)
	seed(mr, now, time.Hour)
	newServer := func(t *testing.T) keyserver.KeyServer {
		return serversOn(t, []*miniredis.Miniredis{mr})[0]
	}
	startcalltest.Run(t, newServer)
	var mu sync.Mutex
	keyservertest.Run(t, newServer, keyservertest.WithAdvance(func(d time.Duration) {
		mu.Lock()
		defer mu.Unlock()
		now = now.Add(d)
		mr.SetTime(now)
		mr.FastForward(d)
	}))
}
