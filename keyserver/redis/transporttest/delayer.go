package transporttest

import (
	"testing"
	"time"

	"github.com/goredlock/goredlock/internal/layout"
	"github.com/goredlock/goredlock/internal/redistest"
	"github.com/goredlock/goredlock/keyserver"
)

// lockDelay checks what a lock-delay leaves in Redis (keyserver.Delayer):
// the lock key lives its TTL plus the delay, the record beside it holds
// the delay with the same TTL, and a release deletes both, as does a
// hand-over to a waiter; and that a lock without one runs the commands it
// ran before (SET NX; the release script's GET and DEL) and leaves no
// record.
func (s *suite) lockDelay(t *testing.T) {
	n, srv := s.single(t)
	c := counter{t, n}
	warm(t, srv)
	const key = "delayed"
	delay := 30 * time.Second
	record := layout.DelayKey(key)
	pttl := func(k string) time.Duration {
		t.Helper()
		ms, _ := n.MustDo("PTTL", k).(int64)
		return time.Duration(ms) * time.Millisecond
	}
	exists := func(k string) bool {
		t.Helper()
		n, _ := n.MustDo("EXISTS", k).(int64)
		return n == 1
	}

	v := srv.Delayed(delay)
	h := ranked(1, 1)
	calls := c.measure(func() {
		want(t, "Delayed.Acquire", true)(v.Acquire(bg, key, h, ttl))
		want(t, "Delayed.Release", true)(v.Release(bg, key, h))
	})
	t.Logf("uncontended Acquire+Release with a lock-delay: %d commands %v", sum(calls), calls)

	want(t, "Delayed.Acquire", true)(v.Acquire(bg, key, h, ttl))
	if got := redistest.Text(n.MustDo("GET", record)); got != "30000" {
		t.Errorf("the delay's record holds %q; want the delay in ms, 30000", got)
	}
	if k, r := pttl(key), pttl(record); k <= ttl || k > ttl+delay || r < k-time.Second || r > k+time.Second {
		t.Errorf("PTTL of the key %v and of the record %v; want both about the TTL %v plus the delay %v", k, r, ttl, delay)
	}
	want(t, "Delayed.Extend", true)(v.Extend(bg, key, h, ttl))
	want(t, "Acquire(other) of the key", false)(srv.Acquire(bg, key, "other", ttl))
	want(t, "Release(other) of the key", false)(v.Release(bg, key, "other"))
	if !exists(record) {
		t.Error("another token's release deleted the record")
	}
	want(t, "Delayed.Release", true)(v.Release(bg, key, h))
	if exists(key) || exists(record) {
		t.Error("a clean release left the key or its record")
	}

	// A hand-over to a waiter ends the delay too.
	want(t, "Delayed.Acquire", true)(v.Acquire(bg, key, h, ttl))
	w := ranked(2, 1)
	ok, hd, err := srv.AcquireInLine(bg, key, w, ttl, "")
	want(t, "AcquireInLine(waiter)", false)(ok, err)
	if hd.Left <= ttl {
		t.Errorf("the waiter's refusal reported %v left; want the TTL %v plus what is left of the delay", hd.Left, ttl)
	}
	want(t, "Delayed.Release with a waiter", true)(v.Release(bg, key, h))
	if exists(record) {
		t.Error("a release that handed the key over left the record")
	}
	ok, _, err = srv.AcquireInLine(bg, key, ranked(2, 2), ttl, "")
	want(t, "the waiter's claim", true)(ok, err)
	if pttl(key) > ttl {
		t.Errorf("the waiter's key lives %v; want no more than its TTL %v", pttl(key), ttl)
	}
	want(t, "Release(waiter)", true)(srv.Release(bg, key, ranked(2, 2)))

	// A lock without a delay: as before.
	calls = c.measure(func() {
		want(t, "Acquire", true)(srv.Acquire(bg, key, h, ttl))
		want(t, "Release", true)(srv.Release(bg, key, h))
	})
	if got := sum(calls); got != 4 || calls["set"] != 1 || calls["del"] != 1 {
		t.Errorf("uncontended Acquire+Release without a lock-delay ran %d commands %v; want 4: SET NX, the script, GET and DEL", got, calls)
	}
	if exists(record) {
		t.Error("a lock without a delay left a record")
	}

	// Delayed(0), as the client cuts a lock held with WithMinHold: no delay.
	want(t, "Delayed.Acquire", true)(v.Acquire(bg, key, h, ttl))
	want(t, "Delayed(0).Extend", true)(srv.Delayed(0).Extend(bg, key, h, time.Second))
	if exists(record) || pttl(key) > time.Second {
		t.Errorf("Delayed(0).Extend left the record (%v) or the key for %v; want neither, and at most 1s", exists(record), pttl(key))
	}
	want(t, "Release", true)(srv.Release(bg, key, h))
	var _ keyserver.Delayer = srv
}
