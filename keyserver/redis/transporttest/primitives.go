package transporttest

import (
	"testing"
	"time"

	"github.com/goredlock/goredlock/internal/layout"
	"github.com/goredlock/goredlock/keyserver"
	"github.com/goredlock/goredlock/keyserver/redis"
)

// primitiveCommandCounts pins what a permit, a read hold and a write hold
// cost Redis when nobody contends: at most twice a lock's four commands,
// so that a primitive is not the expensive way to hold something. A
// permit past the first keyserver.MaxInspected slots costs six more, to
// record it for Inspect.
func (s *suite) primitiveCommandCounts(t *testing.T) {
	n := node(t)
	srv := s.server(t, Target{Addr: n.Addr()})
	c := counter{t, n}
	sem, rw := layout.SemaphoreKey("counted"), layout.RWKey("counted")
	tok := ranked(1, 1)
	large := layout.SemaphoreKey("counted-large")
	steps := []struct {
		name string
		most int
		run  func()
	}{
		{"permit of 1", 8, func() { takeAndRelease(t, srv, permitOf(sem, 1, 0, tok)) }},
		{"permit of 3", 8, func() { takeAndRelease(t, srv, permitOf(sem, 3, 2, tok)) }},
		{"permit of 10,000 at slot 9,000", 14, func() { takeAndRelease(t, srv, permitOf(large, 10_000, 9_000, tok)) }},
		{"read hold", 8, func() { takeAndRelease(t, srv, holdOf(keyserver.ReadHold, rw, tok)) }},
		{"write hold", 8, func() { takeAndRelease(t, srv, holdOf(keyserver.WaitingWriteHold, rw, tok)) }},
	}
	for _, st := range steps {
		st.run() // the first runs load the scripts and open connections
		st.run()
		calls := c.measure(st.run)
		got := sum(calls)
		t.Logf("uncontended %s, taken and released: %d commands", st.name, got)
		if got > st.most {
			t.Errorf("uncontended %s, taken and released, took %d commands %v; want at most %d", st.name, got, calls, st.most)
		}
	}
}

// permitOf is token's hold of slot of the semaphore key of permits.
func permitOf(key string, permits, slot int, token string) keyserver.HoldSpec {
	return keyserver.HoldSpec{Kind: keyserver.PermitHold, Key: key, Token: token, Permits: permits, Slot: slot}
}

// holdOf is token's hold of kind of key.
func holdOf(kind keyserver.HoldKind, key, token string) keyserver.HoldSpec {
	return keyserver.HoldSpec{Kind: kind, Key: key, Token: token}
}

// takeAndRelease takes h on srv and releases it, both granted.
func takeAndRelease(t *testing.T, srv *redis.Server, h keyserver.HoldSpec) {
	t.Helper()
	ok, _, err := srv.AcquireHold(bg, h, ttl)
	want(t, "AcquireHold", true)(ok, err)
	want(t, "ReleaseHold", true)(srv.ReleaseHold(bg, h))
}

// releaseWakesOneWatcher checks whom a primitive's release wakes, across
// two Servers as across two processes: the earliest watcher alone, in the
// order the watchers came (one freed slot serves one waiter, and the herd would cost every waiter
// an attempt), every watcher when the earliest is a reader, and never a
// call that was granted meanwhile, which left the watchers.
func (s *suite) releaseWakesOneWatcher(t *testing.T) {
	n := node(t)
	a, b := s.server(t, Target{Addr: n.Addr()}), s.server(t, Target{Addr: n.Addr()})
	sem := layout.SemaphoreKey("woken")
	take := func(srv *redis.Server, token string, d time.Duration, want bool) {
		t.Helper()
		ok, _, err := srv.AcquireHold(bg, permitOf(sem, 1, 0, token), d)
		if err != nil || ok != want {
			t.Fatalf("AcquireHold(permit %s) = %v, %v; want %v", token, ok, err, want)
		}
	}
	watch := func(srv *redis.Server, token string) <-chan struct{} {
		t.Helper()
		ch, stop, err := srv.WatchHolds(bg, permitOf(sem, 1, 0, token))
		must(t, "WatchHolds(permit)", err)
		t.Cleanup(stop)
		return ch
	}
	holder, first, second := ranked(1, 1), ranked(2, 1), ranked(3, 1)
	short := 300 * time.Millisecond
	take(a, holder, short, true)
	take(a, first, ttl, false)
	take(b, second, ttl, false)
	w2 := watch(b, second) // registered first, but later by rank
	w1 := watch(a, first)
	// The watchers outlive their last registration by LineTTL at most, as
	// a lock's line does: a waiter that stopped waiting leaves nothing
	// behind for long.
	if left, ok := n.MustDo("PTTL", sem+":watchers").(int64); !ok || left <= 0 || left > keyserver.LineTTL.Milliseconds() {
		t.Errorf("the watchers' TTL is %v ms; want at most %v", n.MustDo("PTTL", sem+":watchers"), keyserver.LineTTL)
	}
	// The holder's slot lapses unannounced; the first waiter takes it
	// while it watches, which takes it out of the watchers.
	time.Sleep(short + 50*time.Millisecond)
	take(a, first, ttl, true)
	want(t, "ReleaseHold(permit first)", true)(a.ReleaseHold(bg, permitOf(sem, 1, 0, first)))
	awaitClosed(t, w2, 5*time.Second, "the second waiter's watch, at the release of the first, who was granted as a watcher")
	if isClosed(w1) {
		t.Errorf("the first waiter's watch was woken by its own release")
	}

	third, fourth := ranked(4, 1), ranked(5, 1)
	take(b, second, ttl, true)
	w3, w4 := watch(a, third), watch(b, fourth)
	want(t, "ReleaseHold(permit second)", true)(b.ReleaseHold(bg, permitOf(sem, 1, 0, second)))
	awaitClosed(t, w3, 5*time.Second, "the earliest watcher's watch")
	time.Sleep(200 * time.Millisecond)
	if isClosed(w4) {
		t.Errorf("a release woke the second watcher too; one freed slot serves one waiter")
	}

	rw := layout.RWKey("woken")
	writer, r1, r2, w := ranked(6, 1), ranked(7, 1), ranked(8, 1), ranked(9, 1)
	want(t, "AcquireHold(writer)", true)(func() (bool, error) {
		ok, _, err := a.AcquireHold(bg, holdOf(keyserver.WriteHold, rw, writer), ttl)
		return ok, err
	}())
	watchHolds := func(srv *redis.Server, token string, write bool) <-chan struct{} {
		t.Helper()
		kind := keyserver.ReadHold
		if write {
			kind = keyserver.WaitingWriteHold
		}
		ch, stop, err := srv.WatchHolds(bg, holdOf(kind, rw, token))
		must(t, "WatchHolds", err)
		t.Cleanup(stop)
		return ch
	}
	wr1, wr2, ww := watchHolds(a, r1, false), watchHolds(b, r2, false), watchHolds(b, w, true)
	want(t, "ReleaseHold(writer)", true)(a.ReleaseHold(bg, holdOf(keyserver.WriteHold, rw, writer)))
	for _, c := range []struct {
		what string
		ch   <-chan struct{}
	}{{"the earliest reader", wr1}, {"the second reader", wr2}, {"the writer behind them", ww}} {
		awaitClosed(t, c.ch, 5*time.Second, c.what+"'s watch, when the earliest watcher is a reader")
	}
}
