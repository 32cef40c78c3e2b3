package transporttest

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/goredlock/goredlock/internal/redistest"
	"github.com/goredlock/goredlock/keyserver/redis"
)

// fastPath checks that a free key costs one plain SET NX, for Acquire,
// AcquireOrHolder and AcquireInLine alike, and that a key that exists gets
// the script.
func (s *suite) fastPath(t *testing.T) {
	n, srv := s.single(t)
	c := counter{t, n}
	warm(t, srv)
	for _, tc := range []struct {
		name string
		call func(key string) (bool, error)
	}{
		{"Acquire", func(key string) (bool, error) { return srv.Acquire(bg, key, "t", ttl) }},
		{"AcquireOrHolder", func(key string) (bool, error) { ok, _, err := srv.AcquireOrHolder(bg, key, "t", ttl); return ok, err }},
		{"AcquireInLine", func(key string) (bool, error) {
			ok, _, err := srv.AcquireInLine(bg, key, ranked(1, 1), ttl, "")
			return ok, err
		}},
	} {
		c.reset()
		want(t, tc.name+" of a free key", true)(tc.call("free/" + tc.name))
		if got := c.calls(); len(got) != 1 || got["set"] != 1 {
			t.Errorf("%s of a free key ran %v; want one SET", tc.name, got)
		}
	}
	c.reset()
	want(t, "Acquire of a key of ours", true)(srv.Acquire(bg, "free/Acquire", "t", ttl))
	if got := c.calls(); got["evalsha"] != 1 {
		t.Errorf("Acquire of a key that exists ran %v; want the script by digest", got)
	}
}

// warm runs every script once, so that the server knows their digests.
func warm(t *testing.T, srv *redis.Server) {
	t.Helper()
	const key = "warm"
	want(t, "Acquire", true)(srv.Acquire(bg, key, "a", ttl))
	want(t, "Acquire again", true)(srv.Acquire(bg, key, "a", ttl))
	want(t, "Extend", true)(srv.Extend(bg, key, "a", ttl))
	_, _, err := srv.AcquireOrHolder(bg, key, "b", ttl)
	must(t, "AcquireOrHolder", err)
	_, _, err = srv.AcquireInLine(bg, key, ranked(9, 1), ttl, "")
	must(t, "AcquireInLine", err)
	must(t, "LeaveLine", srv.LeaveLine(bg, key, ranked(9, 1)))
	want(t, "Release", true)(srv.Release(bg, key, "a"))
	_, _, err = srv.AcquireFenced(bg, key, "a", ttl)
	must(t, "AcquireFenced", err)
	_, err = srv.RaiseFence(bg, key, 1)
	must(t, "RaiseFence", err)
	want(t, "Release", true)(srv.Release(bg, key, "a"))
}

// commandCounts pins what each step of a lock's life costs Redis, in
// commands (a script counts one, and one more for each command it runs),
// uncontended and contended, and logs the figures.
func (s *suite) commandCounts(t *testing.T) {
	n := node(t)
	holder, waiter := s.server(t, Target{Addr: n.Addr()}), s.server(t, Target{Addr: n.Addr()})
	c := counter{t, n}
	warm(t, holder)
	warm(t, waiter)
	const key = "counted"
	h, w := ranked(1, 1), ranked(2, 1)
	steps := []struct {
		name string
		max  int
		run  func()
	}{
		{"uncontended Acquire+Release", 4, func() {
			want(t, "Acquire", true)(holder.Acquire(bg, key, h, ttl))
			want(t, "Release", true)(holder.Release(bg, key, h))
		}},
		// SET NX, then the script: SET NX GET, ZADD, PEXPIRE, ZRANK,
		// the PUBLISH of a waiter first in line (for a holder that
		// watches for contention), the holder's mark and PTTL.
		{"refused AcquireInLine", 9, func() {
			want(t, "Acquire", true)(holder.Acquire(bg, key, h, ttl))
			c.reset()
			ok, _, err := waiter.AcquireInLine(bg, key, w, ttl, "")
			want(t, "AcquireInLine", false)(ok, err)
		}},
	}
	for _, st := range steps {
		calls := c.measure(st.run)
		got := sum(calls)
		t.Logf("%s: %d commands", st.name, got)
		if got > st.max {
			t.Errorf("%s took %d commands %v; want at most %d", st.name, got, calls, st.max)
		}
	}
	c.reset()
	turn, stop, err := waiter.WatchTurn(bg, key, w)
	must(t, "WatchTurn", err)
	defer stop()
	t.Logf("first WatchTurn of a key (SUBSCRIBE and the look again): %d commands", c.total())
	turn2, stop2, err := waiter.WatchTurn(bg, key, ranked(3, 1))
	must(t, "WatchTurn", err)
	stop2()
	_ = turn2
	t.Logf("WatchTurn of a subscribed key (the look again): %d commands", c.total())
	want(t, "Release with a waiter", true)(holder.Release(bg, key, h))
	t.Logf("Release with a waiter: %d commands", c.total())
	awaitClosed(t, turn, 5*time.Second, "the waiter's turn")
	ok, _, err := waiter.AcquireInLine(bg, key, ranked(2, 2), ttl, "")
	want(t, "AcquireInLine claiming", true)(ok, err)
	t.Logf("claiming AcquireInLine: %d commands", c.total())
	want(t, "Release without waiters", true)(waiter.Release(bg, key, ranked(2, 2)))
	if got := c.total(); got > 4 { // the script, GET, ZPOPMIN (none), DEL
		t.Errorf("Release of a claimed key without waiters took %d commands; want at most 4", got)
	} else {
		t.Logf("Release without waiters: %d commands", got)
	}
}

// turnAcrossServers checks the line between two servers, as between two
// processes: a waiter of one is woken by a release through the other, and
// the key is promised to it alone.
func (s *suite) turnAcrossServers(t *testing.T) {
	n := node(t)
	a, b := s.server(t, Target{Addr: n.Addr()}), s.server(t, Target{Addr: n.Addr()})
	const key = "across"
	h, w := ranked(1, 1), ranked(2, 1)
	want(t, "Acquire(holder) through a", true)(a.Acquire(bg, key, h, ttl))
	ok, hd, err := b.AcquireInLine(bg, key, w, ttl, "")
	want(t, "AcquireInLine(waiter) through b", false)(ok, err)
	if hd.Rank != -1 || hd.Left <= 0 {
		t.Errorf("refusal reported %+v; want the holder first, with its TTL", hd)
	}
	turn, stop, err := b.WatchTurn(bg, key, w)
	must(t, "WatchTurn through b", err)
	defer stop()
	if isClosed(turn) {
		t.Fatal("the turn came while the key was held")
	}
	want(t, "Release(holder) through a", true)(a.Release(bg, key, h))
	awaitClosed(t, turn, 5*time.Second, "b's waiter's turn after a's release")
	want(t, "Acquire(other) of the promised key", false)(a.Acquire(bg, key, "other", ttl))
	ok, _, err = b.AcquireInLine(bg, key, ranked(2, 2), ttl, "")
	want(t, "the waiter's claim", true)(ok, err)
	want(t, "Release(waiter)", true)(b.Release(bg, key, ranked(2, 2)))
}

// turnBeforeWatch checks a waiter that took its place in line while its
// server was already subscribed: a release that comes between its refusal
// and its WatchTurn still gives it its turn, and the watch costs Redis no
// command (the turn came on the subscription, and was kept for it).
func (s *suite) turnBeforeWatch(t *testing.T) {
	n := node(t)
	holder, waiter := s.server(t, Target{Addr: n.Addr()}), s.server(t, Target{Addr: n.Addr()})
	_, stop, err := waiter.WatchTurn(bg, "subscribes", ranked(9, 1))
	must(t, "WatchTurn of another key", err)
	defer stop()
	c := counter{t, n}
	for i := uint32(1); i <= 20; i++ {
		key := fmt.Sprint("early/", i)
		h, w := ranked(i, 1), ranked(100+i, 1)
		want(t, "Acquire(holder)", true)(holder.Acquire(bg, key, h, ttl))
		ok, _, err := waiter.AcquireInLine(bg, key, w, ttl, "")
		want(t, "AcquireInLine(waiter)", false)(ok, err)
		want(t, "Release(holder)", true)(holder.Release(bg, key, h))
		c.reset()
		turn, stopTurn, err := waiter.WatchTurn(bg, key, w)
		must(t, "WatchTurn after the release", err)
		if got := c.total(); got != 0 {
			t.Errorf("WatchTurn of a waiter that joined while subscribed took %d commands; want none", got)
		}
		awaitClosed(t, turn, 5*time.Second, "the turn of a release before the watch")
		stopTurn()
		ok, _, err = waiter.AcquireInLine(bg, key, ranked(100+i, 2), ttl, "")
		want(t, "the waiter's claim", true)(ok, err)
	}
}

// turnAfterAFiredWatch checks a waiter whose watch fired at one turn and
// stays set while the waiter takes its place again (it stops the old watch
// only once the new one is set): the next turn, which comes before the new
// watch, is kept for it, not swallowed by the old one.
func (s *suite) turnAfterAFiredWatch(t *testing.T) {
	n := node(t)
	holder, waiter := s.server(t, Target{Addr: n.Addr()}), s.server(t, Target{Addr: n.Addr()})
	const key, marker = "refired", "refired/marker"
	w := ranked(100, 1)
	want(t, "Acquire(holder)", true)(holder.Acquire(bg, key, ranked(1, 1), ttl))
	ok, _, err := waiter.AcquireInLine(bg, key, w, ttl, "")
	want(t, "AcquireInLine(waiter)", false)(ok, err)
	old, stopOld, err := waiter.WatchTurn(bg, key, w)
	must(t, "WatchTurn", err)
	defer stopOld()
	want(t, "Release(holder)", true)(holder.Release(bg, key, ranked(1, 1)))
	awaitClosed(t, old, 5*time.Second, "the first turn")

	// The waiter gives its promise back and takes its place again, its
	// old watch still set.
	must(t, "LeaveLine(waiter)", waiter.LeaveLine(bg, key, w))
	want(t, "Acquire(holder) again", true)(holder.Acquire(bg, key, ranked(2, 1), ttl))
	ok, _, err = waiter.AcquireInLine(bg, key, w, ttl, "")
	want(t, "AcquireInLine(waiter) again", false)(ok, err)
	// A turn on another key, watched, shows when the subscriber has read
	// what the release of key published before it.
	want(t, "Acquire(holder) of the marker", true)(holder.Acquire(bg, marker, ranked(3, 1), ttl))
	ok, _, err = waiter.AcquireInLine(bg, marker, ranked(101, 1), ttl, "")
	want(t, "AcquireInLine(waiter) of the marker", false)(ok, err)
	mark, stopMark, err := waiter.WatchTurn(bg, marker, ranked(101, 1))
	must(t, "WatchTurn of the marker", err)
	defer stopMark()
	want(t, "Release(holder)", true)(holder.Release(bg, key, ranked(2, 1)))
	want(t, "Release(holder) of the marker", true)(holder.Release(bg, marker, ranked(3, 1)))
	awaitClosed(t, mark, 5*time.Second, "the marker's turn")

	turn, stop, err := waiter.WatchTurn(bg, key, w)
	must(t, "WatchTurn after the second release", err)
	defer stop()
	awaitClosed(t, turn, 5*time.Second, "the second turn, which came while the first watch was set")
}

// oneSubscriberConnection checks that the waiters of a server share one
// Pub/Sub connection, whatever their keys, and each hears its own turn.
func (s *suite) oneSubscriberConnection(t *testing.T) {
	n := node(t)
	holder, waiter := s.server(t, Target{Addr: n.Addr()}), s.server(t, Target{Addr: n.Addr()})
	var turns []<-chan struct{}
	for i := uint32(1); i <= 10; i++ {
		key := fmt.Sprint("shared/", i)
		want(t, "Acquire", true)(holder.Acquire(bg, key, ranked(i, 1), ttl))
		ok, _, err := waiter.AcquireInLine(bg, key, ranked(100+i, 1), ttl, "")
		want(t, "AcquireInLine", false)(ok, err)
		turn, stop, err := waiter.WatchTurn(bg, key, ranked(100+i, 1))
		must(t, "WatchTurn", err)
		defer stop()
		turns = append(turns, turn)
	}
	if got := strings.Count(redistest.Text(n.MustDo("CLIENT", "LIST", "TYPE", "pubsub")), "id="); got != 1 {
		t.Errorf("%d Pub/Sub connections for ten waiters; want one", got)
	}
	want(t, "Release", true)(holder.Release(bg, "shared/3", ranked(3, 1)))
	awaitClosed(t, turns[2], 5*time.Second, "the third waiter's turn")
	for i, turn := range turns {
		if i != 2 && isClosed(turn) {
			t.Errorf("waiter %d woke at another key's turn", i+1)
		}
	}
}
