package transporttest

import (
	"testing"

	"github.com/goredlock/goredlock/keyserver"
)

// setCommandCounts pins what a free set costs Redis, as commandCounts
// does a lock's: a SET NX GET per key to take it and one MGET and one
// DEL to let go of every key, with a script call each (4 + N commands
// for N keys; a lock costs 4).
func (s *suite) setCommandCounts(t *testing.T) {
	n := node(t)
	srv := s.server(t, Target{Addr: n.Addr()})
	c := counter{t, n}
	keys := []string{"{counted}a", "{counted}b", "{counted}c", "{counted}d"}
	tok := ranked(1, 1)
	// Once, so that both scripts are loaded and the connection is open.
	want(t, "AcquireAll", true)(acquired(srv.AcquireAll(bg, keys, tok, ttl)))
	want(t, "ReleaseAll", true)(srv.ReleaseAll(bg, keys, tok))
	tok = ranked(1, 2)
	calls := c.measure(func() {
		want(t, "AcquireAll", true)(acquired(srv.AcquireAll(bg, keys, tok, ttl)))
		want(t, "ReleaseAll", true)(srv.ReleaseAll(bg, keys, tok))
		tok = ranked(1, 3) // a retried measure takes the set afresh
	})
	got := sum(calls)
	t.Logf("uncontended AcquireAll+ReleaseAll of %d keys: %d commands", len(keys), got)
	if max := 4 + len(keys); got > max {
		t.Errorf("uncontended AcquireAll+ReleaseAll of %d keys took %d commands %v; want at most %d", len(keys), got, calls, max)
	}
}

// acquired is an AcquireAll's answer as want takes it.
func acquired(ok bool, _ keyserver.Holder, err error) (bool, error) { return ok, err }
