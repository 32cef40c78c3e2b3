package keyservertest

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/goredlock/goredlock/keyserver"
)

// setChecks are the checks of keyserver.SetLocker: all or nothing on each
// call; a server that does not implement it passes them.
func (s *suite) setChecks() []check {
	return []check{
		{"SetIsAllOrNothing", s.setIsAllOrNothing},
		{"SetGrantedHoldsEveryKey", s.setGrantedHoldsEveryKey},
		{"SetExtendIsAllOrNothing", s.setExtendIsAllOrNothing},
		{"SetExtendRenewsTTL", s.setExtendRenewsTTL},
		{"SetReleaseTakesOnlyTheTokens", s.setReleaseTakesOnlyTheTokens},
		{"SetHonoursPromises", s.setHonoursPromises},
		{"SetKeepsTheLine", s.setKeepsTheLine},
		{"SetWaitsInLine", s.setWaitsInLine},
		{"SetYieldsToAnEarlierPromise", s.setYieldsToAnEarlierPromise},
		{"SetArguments", s.setArguments},
	}
}

// setLocker returns ks as a SetLocker, if it is one, and n keys named
// after key that share a Redis Cluster hash slot (a common hash tag).
func setLocker(ks keyserver.KeyServer, key string, n int) (keyserver.SetLocker, []string, bool) {
	sl, ok := ks.(keyserver.SetLocker)
	keys := make([]string, n)
	for i := range keys {
		keys[i] = fmt.Sprintf("{%s}:%d", key, i)
	}
	return sl, keys, ok
}

// acquireAll returns a checker of one AcquireAll, which returns the holder
// a refusal described.
func acquireAll(t *testing.T, sl keyserver.SetLocker, what string, keys []string, token string, ttl time.Duration, want bool) keyserver.Holder {
	t.Helper()
	ok, h, err := sl.AcquireAll(context.Background(), keys, token, ttl)
	if err != nil || ok != want {
		t.Fatalf("%s = %v, %+v, %v; want %v, nil", what, ok, h, err, want)
	}
	return h
}

// requireFree checks that each key is free, as a token without a rank
// finds it, and leaves it free.
func requireFree(t *testing.T, ks keyserver.KeyServer, what string, keys ...string) {
	t.Helper()
	ctx := context.Background()
	for _, k := range keys {
		expect(t, "Acquire(x) of "+k+" "+what, true)(ks.Acquire(ctx, k, "x", ttl))
		expect(t, "Release(x) of "+k, true)(ks.Release(ctx, k, "x"))
	}
}

// requireHeld checks that token holds each key: another token is refused
// it, and token's own Extend renews it.
func requireHeld(t *testing.T, ks keyserver.KeyServer, what, token string, keys ...string) {
	t.Helper()
	ctx := context.Background()
	for _, k := range keys {
		expect(t, "Acquire(x) of "+k+" "+what, false)(ks.Acquire(ctx, k, "x", ttl))
		expect(t, "Extend("+token+") of "+k+" "+what, true)(ks.Extend(ctx, k, token, ttl))
	}
}

// setIsAllOrNothing checks that a set one key of which another token
// holds is refused, stores nothing, and describes that holder.
func (s *suite) setIsAllOrNothing(t *testing.T, ks keyserver.KeyServer, key string) {
	sl, keys, ok := setLocker(ks, key, 3)
	if !ok {
		return
	}
	ctx := context.Background()
	for i := range keys {
		expect(t, "Acquire(b) of one key of the set", true)(ks.Acquire(ctx, keys[i], "b", ttl))
		h := acquireAll(t, sl, fmt.Sprintf("AcquireAll(a) with key %d held by b", i), keys, "a", ttl, false)
		if h.Left <= 0 || h.Left > ttl+time.Millisecond {
			t.Errorf("AcquireAll(a) refused by b's key described %v left of b's TTL of %v", h.Left, ttl)
		}
		expect(t, "Release(b)", true)(ks.Release(ctx, keys[i], "b"))
		requireFree(t, ks, "after the refused AcquireAll: nothing stored", keys...)
	}
	acquireAll(t, sl, "AcquireAll(a) of the free set", keys, "a", ttl, true)
	other := fmt.Sprintf("{%s}:other", key)
	acquireAll(t, sl, "AcquireAll(b) of a set a holds", keys, "b", ttl, false)
	acquireAll(t, sl, "AcquireAll(b) of a set overlapping a's in one key", []string{keys[2], other}, "b", ttl, false)
	requireFree(t, ks, "after the refused overlapping AcquireAll", other)
	expect(t, "ReleaseAll(a)", true)(sl.ReleaseAll(ctx, keys, "a"))
}

// setGrantedHoldsEveryKey checks that a granted set holds token under
// every key, as a lock would (one key's calls see it), that AcquireAll
// again by the holder renews it, and that ReleaseAll frees every key.
func (s *suite) setGrantedHoldsEveryKey(t *testing.T, ks keyserver.KeyServer, key string) {
	sl, keys, ok := setLocker(ks, key, 4)
	if !ok {
		return
	}
	ctx := context.Background()
	acquireAll(t, sl, "AcquireAll(a)", keys, "a", ttl, true)
	requireHeld(t, ks, "after AcquireAll(a)", "a", keys...)
	acquireAll(t, sl, "AcquireAll(a) again by its holder", keys, "a", ttl, true)
	acquireAll(t, sl, "AcquireAll(a) of a part of its set", keys[1:3], "a", ttl, true)
	requireHeld(t, ks, "after AcquireAll(a) again", "a", keys...)
	expect(t, "ReleaseAll(a)", true)(sl.ReleaseAll(ctx, keys, "a"))
	requireFree(t, ks, "after ReleaseAll(a)", keys...)
	acquireAll(t, sl, "AcquireAll(a) of one key", keys[:1], "a", ttl, true)
	requireHeld(t, ks, "after AcquireAll(a) of one key", "a", keys[0])
	expect(t, "Release(a) of a key AcquireAll took", true)(ks.Release(ctx, keys[0], "a"))
	requireFree(t, ks, "after its Release", keys...)
}

// setExtendIsAllOrNothing checks that ExtendAll renews the set, stores
// again the keys it lost, and stores nothing when another token holds
// one of its keys.
func (s *suite) setExtendIsAllOrNothing(t *testing.T, ks keyserver.KeyServer, key string) {
	sl, keys, ok := setLocker(ks, key, 3)
	if !ok {
		return
	}
	ctx := context.Background()
	acquireAll(t, sl, "AcquireAll(a)", keys, "a", ttl, true)
	expect(t, "ExtendAll(a) by its holder", true)(sl.ExtendAll(ctx, keys, "a", ttl))
	expect(t, "ExtendAll(b) of a set a holds", false)(sl.ExtendAll(ctx, keys, "b", ttl))
	expect(t, "Release(a) of one key: lost, as by a restart", true)(ks.Release(ctx, keys[1], "a"))
	expect(t, "ExtendAll(a) of the set with a key lost", true)(sl.ExtendAll(ctx, keys, "a", ttl))
	requireHeld(t, ks, "after ExtendAll(a) stored the lost key again", "a", keys...)
	expect(t, "ReleaseAll(a)", true)(sl.ReleaseAll(ctx, keys, "a"))
	expect(t, "ExtendAll(a) of the absent set", true)(sl.ExtendAll(ctx, keys, "a", ttl))
	requireHeld(t, ks, "after ExtendAll(a) re-created the set", "a", keys...)
	expect(t, "ReleaseAll(a)", true)(sl.ReleaseAll(ctx, keys, "a"))

	expect(t, "Acquire(b) of the last key", true)(ks.Acquire(ctx, keys[2], "b", ttl))
	expect(t, "ExtendAll(a) with a key held by b", false)(sl.ExtendAll(ctx, keys, "a", ttl))
	requireFree(t, ks, "after the refused ExtendAll: nothing stored", keys[:2]...)
	acquireAll(t, sl, "AcquireAll(a) of the first two", keys[:2], "a", ttl, true)
	expect(t, "ExtendAll(a) of all three, b holding one", false)(sl.ExtendAll(ctx, keys, "a", ttl))
	expect(t, "Release(b)", true)(ks.Release(ctx, keys[2], "b"))
	requireFree(t, ks, "after the refused ExtendAll: b's key not stored for a", keys[2])
	expect(t, "ReleaseAll(a)", true)(sl.ReleaseAll(ctx, keys[:2], "a"))
}

// setExtendRenewsTTL checks that ExtendAll past half the TTL keeps every
// key held past the end of the first TTL.
func (s *suite) setExtendRenewsTTL(t *testing.T, ks keyserver.KeyServer, key string) {
	sl, keys, ok := setLocker(ks, key, 3)
	if !ok {
		return
	}
	ctx := context.Background()
	for short := s.d(time.Second); ; short *= 2 {
		acquireAll(t, sl, "AcquireAll(a)", keys, "a", short, true)
		s.wait(short * 6 / 10)
		renewed := time.Now()
		expect(t, "ExtendAll(a)", true)(sl.ExtendAll(ctx, keys, "a", short))
		s.wait(short * 6 / 10)
		oks, errs := make([]bool, len(keys)), make([]error, len(keys))
		for i, k := range keys {
			oks[i], errs[i] = ks.Acquire(ctx, k, "b", ttl)
		}
		if s.overran(renewed, short) {
			sl.ReleaseAll(ctx, keys, "a")
			sl.ReleaseAll(ctx, keys, "b")
			continue
		}
		for i, k := range keys {
			expect(t, "Acquire(b) of "+k+" after ExtendAll renewed past the first TTL", false)(oks[i], errs[i])
		}
		expect(t, "ReleaseAll(a)", true)(sl.ReleaseAll(ctx, keys, "a"))
		return
	}
}

// setReleaseTakesOnlyTheTokens checks that ReleaseAll lets go of the keys
// that hold its token only, and says whether every one did.
func (s *suite) setReleaseTakesOnlyTheTokens(t *testing.T, ks keyserver.KeyServer, key string) {
	sl, keys, ok := setLocker(ks, key, 3)
	if !ok {
		return
	}
	ctx := context.Background()
	expect(t, "ReleaseAll(a) of an absent set", false)(sl.ReleaseAll(ctx, keys, "a"))
	acquireAll(t, sl, "AcquireAll(a) of the first two", keys[:2], "a", ttl, true)
	expect(t, "Acquire(b) of the last", true)(ks.Acquire(ctx, keys[2], "b", ttl))
	expect(t, "ReleaseAll(c) of keys a and b hold", false)(sl.ReleaseAll(ctx, keys, "c"))
	requireHeld(t, ks, "after c's ReleaseAll", "a", keys[:2]...)
	requireHeld(t, ks, "after c's ReleaseAll", "b", keys[2])
	expect(t, "ReleaseAll(a) of all three, b holding one", false)(sl.ReleaseAll(ctx, keys, "a"))
	requireFree(t, ks, "after ReleaseAll(a)", keys[:2]...)
	requireHeld(t, ks, "after a's ReleaseAll", "b", keys[2])
	expect(t, "ReleaseAll(b) of the one key it holds", true)(sl.ReleaseAll(ctx, keys[2:], "b"))
	requireFree(t, ks, "after ReleaseAll(b)", keys...)
	acquireAll(t, sl, "AcquireAll(a)", keys, "a", ttl, true)
	expect(t, "ReleaseAll(a) of every key it holds", true)(sl.ReleaseAll(ctx, keys, "a"))
	expect(t, "ReleaseAll(a) a second time", false)(sl.ReleaseAll(ctx, keys, "a"))
}

// setHonoursPromises checks a Notifier's promises (a server that is not
// one passes): a key promised to a waiter's call refuses another's set,
// which then stores nothing, and is the waiter's call's to claim with a
// set, by any of its tokens; ReleaseAll leaves a promise alone.
func (s *suite) setHonoursPromises(t *testing.T, ks keyserver.KeyServer, key string) {
	sl, keys, ok := setLocker(ks, key, 3)
	ns, isNotifier := notifier(ks)
	if !ok || !isNotifier {
		return
	}
	ctx := context.Background()
	l := line{t, ns, keys[1]}
	holder, waiter := ranked(1, 1), ranked(2, 1)
	l.promise(holder, waiter)
	acquireAll(t, sl, "AcquireAll(x) with a key promised to another call", keys, "x", ttl, false)
	acquireAll(t, sl, "AcquireAll of a later call with a key promised to another", keys, ranked(3, 1), ttl, false)
	requireFree(t, ks, "after the refused AcquireAll: nothing stored", keys[0], keys[2])
	expect(t, "ReleaseAll by the waiter's call of its promise", false)(sl.ReleaseAll(ctx, keys[1:2], ranked(2, 2)))
	expect(t, "Acquire(x) of the key still promised", false)(ks.Acquire(ctx, keys[1], "x", ttl))
	acquireAll(t, sl, "AcquireAll by the waiter's call, claiming its promise", keys, ranked(2, 3), ttl, true)
	requireHeld(t, ks, "after the waiter's call claimed the set", ranked(2, 3), keys...)
	expect(t, "ReleaseAll by the waiter's call", true)(sl.ReleaseAll(ctx, keys, ranked(2, 3)))
	requireFree(t, ks, "after the waiter's release", keys...)

	l.promise(holder, waiter)
	expect(t, "ExtendAll by the waiter's call, claiming its promise", true)(sl.ExtendAll(ctx, keys, ranked(2, 4), ttl))
	requireHeld(t, ks, "after the waiter's ExtendAll", ranked(2, 4), keys...)
	expect(t, "ReleaseAll by the waiter's call", true)(sl.ReleaseAll(ctx, keys, ranked(2, 4)))
	requireFree(t, ks, "after the waiter's release", keys...)
}

// setKeepsTheLine checks that a set's keys keep a Notifier's line (a
// server that is not one passes): a key of the set with waiters stays its
// holder's to renew, and ReleaseAll passes it to the first waiter, waking
// that one, as Release does.
func (s *suite) setKeepsTheLine(t *testing.T, ks keyserver.KeyServer, key string) {
	sl, keys, ok := setLocker(ks, key, 3)
	ns, isNotifier := notifier(ks)
	if !ok || !isNotifier {
		return
	}
	ctx := context.Background()
	l := line{t, ns, keys[2]}
	holder, waiter := ranked(1, 1), ranked(2, 1)
	acquireAll(t, sl, "AcquireAll(holder)", keys, holder, ttl, true)
	h := l.inLine("AcquireInLine(waiter) of a key of the set", waiter, false)
	if h.Rank != -1 {
		t.Errorf("AcquireInLine(waiter) against the set's holder ranked %d, want -1 (the holder first)", h.Rank)
	}
	turn := l.watch(waiter)
	acquireAll(t, sl, "AcquireAll(holder) again, with a waiter in a key's line", keys, holder, ttl, true)
	expect(t, "ExtendAll(holder) with a waiter in a key's line", true)(sl.ExtendAll(ctx, keys, holder, ttl))
	acquireAll(t, sl, "AcquireAll(x) of the held key with a waiter", keys[2:], "x", ttl, false)
	quiet(t, "the waiter's turn while the set is held", turn)
	expect(t, "ReleaseAll(holder)", true)(sl.ReleaseAll(ctx, keys, holder))
	awaitClosed(t, "the waiter's turn after ReleaseAll", turn)
	requireFree(t, ks, "after ReleaseAll: nobody waits for them", keys[:2]...)
	expect(t, "Acquire(x) of the key promised to the waiter", false)(ks.Acquire(ctx, keys[2], "x", ttl))
	l.inLine("AcquireInLine(waiter), claiming its turn", ranked(2, 2), true)
	expect(t, "Release(waiter)", true)(ks.Release(ctx, keys[2], ranked(2, 2)))
	requireFree(t, ks, "after the line emptied", keys...)
}

// inLineAll returns a checker of one AcquireAllInLine.
func inLineAll(t *testing.T, sl keyserver.SetLocker, what string, keys []string, token string, want bool) keyserver.Holder {
	t.Helper()
	ok, h, err := sl.AcquireAllInLine(context.Background(), keys, token, ttl)
	if err != nil || ok != want {
		t.Fatalf("%s = %v, %+v, %v; want %v, nil", what, ok, h, err, want)
	}
	return h
}

// setWaitsInLine checks that sets wait in their keys' lines in rank order
// (a server that is not a Notifier passes): a release promises every key
// to the earliest set, which a later one cannot take, and the earliest
// claims them all.
func (s *suite) setWaitsInLine(t *testing.T, ks keyserver.KeyServer, key string) {
	sl, keys, ok := setLocker(ks, key, 2)
	ns, isNotifier := notifier(ks)
	if !ok || !isNotifier {
		return
	}
	ctx := context.Background()
	holder, early, late := ranked(1, 1), ranked(2, 1), ranked(3, 1)
	acquireAll(t, sl, "AcquireAll(holder)", keys, holder, ttl, true)
	if h := inLineAll(t, sl, "AcquireAllInLine(early)", keys, early, false); h.Rank != -1 || h.Ahead != 0 {
		t.Errorf("AcquireAllInLine(early) refused with %+v; want Rank -1 (the holder first), none ahead", h)
	}
	if h := inLineAll(t, sl, "AcquireAllInLine(late)", keys, late, false); h.Ahead != 1 {
		t.Errorf("AcquireAllInLine(late) refused with %d ahead; want 1", h.Ahead)
	}
	turn := line{t, ns, keys[1]}.watch(early)
	expect(t, "ReleaseAll(holder)", true)(sl.ReleaseAll(ctx, keys, holder))
	awaitClosed(t, "early's turn after ReleaseAll", turn)
	inLineAll(t, sl, "AcquireAllInLine by late's call, the keys promised to early's", keys, ranked(3, 2), false)
	inLineAll(t, sl, "AcquireAllInLine by early's call, claiming", keys, ranked(2, 2), true)
	requireHeld(t, ks, "after early's call claimed the set", ranked(2, 2), keys...)
	expect(t, "ReleaseAll(early)", true)(sl.ReleaseAll(ctx, keys, ranked(2, 2)))
	inLineAll(t, sl, "AcquireAllInLine by late's call, claiming", keys, ranked(3, 3), true)
	expect(t, "ReleaseAll(late)", true)(sl.ReleaseAll(ctx, keys, ranked(3, 3)))
	requireFree(t, ks, "after the lines emptied", keys...)
}

// setYieldsToAnEarlierPromise checks the rules that keep promises from
// forming a cycle (a server that is not a Notifier passes): a refused set
// keeps the keys promised to it, but, refused by a key promised to an
// earlier rank, gives up those whose line's first waiter ranks earlier;
// an earlier set takes over a key promised to a later one; LeaveLines
// passes promises on.
func (s *suite) setYieldsToAnEarlierPromise(t *testing.T, ks keyserver.KeyServer, key string) {
	sl, keys, ok := setLocker(ks, key, 2)
	ns, isNotifier := notifier(ks)
	if !ok || !isNotifier {
		return
	}
	ctx := context.Background()
	h0, h1 := ranked(1, 1), ranked(1, 2)
	early, late := ranked(2, 1), ranked(3, 1)
	l0, l1 := line{t, ns, keys[0]}, line{t, ns, keys[1]}
	expect(t, "Acquire of key 0", true)(ks.Acquire(ctx, keys[0], h0, ttl))
	expect(t, "Acquire of key 1", true)(ks.Acquire(ctx, keys[1], h1, ttl))
	inLineAll(t, sl, "AcquireAllInLine(late)", keys, late, false)
	l1.inLine("AcquireInLine(early) of key 1, ahead of late", early, false)
	expect(t, "Release of key 0", true)(ks.Release(ctx, keys[0], h0)) // promised to late
	if h := inLineAll(t, sl, "AcquireAllInLine(late) again, refused by a held key", keys, ranked(3, 2), false); h.Promised != 1 {
		t.Errorf("late refused by h1: Promised %b; want 1 (key 0 kept)", h.Promised)
	}
	l0.inLine("AcquireInLine(early) of key 0, promised to late", ranked(2, 2), false)
	expect(t, "Release of key 1", true)(ks.Release(ctx, keys[1], h1)) // promised to early
	if h := inLineAll(t, sl, "AcquireAllInLine(late), refused by early's promise", keys, ranked(3, 3), false); h.Promised != 0 {
		t.Errorf("late refused by early's promise: Promised %b; want 0 (key 0 given to early)", h.Promised)
	}
	l0.inLine("AcquireInLine(early) of key 0, claiming what late gave up", ranked(2, 3), true)
	expect(t, "Release(early) of key 0", true)(ks.Release(ctx, keys[0], ranked(2, 3))) // back to late, in line again
	if err := ns.LeaveLine(ctx, keys[1], early); err != nil {
		t.Fatalf("LeaveLine(early) of key 1: %v", err)
	}
	inLineAll(t, sl, "AcquireAllInLine(late), every key promised to it", keys, ranked(3, 4), true)
	expect(t, "ReleaseAll(late)", true)(sl.ReleaseAll(ctx, keys, ranked(3, 4)))

	// Taken over: key 0 promised to late, which waits for key 1; early's set takes it.
	expect(t, "Acquire of key 0", true)(ks.Acquire(ctx, keys[0], h0, ttl))
	expect(t, "Acquire of key 1", true)(ks.Acquire(ctx, keys[1], h1, ttl))
	late = ranked(5, 1)
	inLineAll(t, sl, "AcquireAllInLine(late)", keys, late, false)
	expect(t, "Release of key 0", true)(ks.Release(ctx, keys[0], h0))
	early = ranked(4, 1)
	if h := inLineAll(t, sl, "AcquireAllInLine(early), key 0 promised to late", keys, early, false); h.Promised != 1 {
		t.Errorf("early: Promised %b; want 1 (late's promise taken over)", h.Promised)
	}
	expect(t, "Release of key 1", true)(ks.Release(ctx, keys[1], h1)) // promised to early, first in line
	inLineAll(t, sl, "AcquireAllInLine(late), the keys early's", keys, ranked(5, 2), false)
	inLineAll(t, sl, "AcquireAllInLine(early), claiming", keys, ranked(4, 2), true)
	expect(t, "ReleaseAll(early)", true)(sl.ReleaseAll(ctx, keys, ranked(4, 2)))
	if err := sl.LeaveLines(ctx, keys, late); err != nil {
		t.Fatalf("LeaveLines(late): %v", err)
	}
	requireFree(t, ks, "after everyone left", keys...)
}

// setArguments checks that the set's calls refuse no keys, an empty key or
// token, and a TTL under a millisecond (as CheckTTL refuses for one key).
func (s *suite) setArguments(t *testing.T, ks keyserver.KeyServer, key string) {
	sl, keys, ok := setLocker(ks, key, 2)
	if !ok {
		return
	}
	ctx := context.Background()
	for _, c := range []struct {
		what  string
		keys  []string
		token string
		ttl   time.Duration
	}{
		{"no keys", nil, "a", ttl},
		{"an empty key", []string{keys[0], ""}, "a", ttl},
		{"an empty token", keys, "", ttl},
		{"a sub-millisecond TTL", keys, "a", time.Millisecond - 1},
		{"a zero TTL", keys, "a", 0},
	} {
		if ok, _, err := sl.AcquireAll(ctx, c.keys, c.token, c.ttl); ok || !errors.Is(err, keyserver.ErrInvalidArgument) {
			t.Errorf("AcquireAll with %s = %v, %v; want false and ErrInvalidArgument", c.what, ok, err)
		}
		if ok, err := sl.ExtendAll(ctx, c.keys, c.token, c.ttl); ok || !errors.Is(err, keyserver.ErrInvalidArgument) {
			t.Errorf("ExtendAll with %s = %v, %v; want false and ErrInvalidArgument", c.what, ok, err)
		}
		if c.ttl == ttl {
			if ok, err := sl.ReleaseAll(ctx, c.keys, c.token); ok || !errors.Is(err, keyserver.ErrInvalidArgument) {
				t.Errorf("ReleaseAll with %s = %v, %v; want false and ErrInvalidArgument", c.what, ok, err)
			}
		}
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if ok, _, err := sl.AcquireAll(cancelled, keys, "a", ttl); ok || err == nil {
		t.Errorf("AcquireAll with a cancelled context = %v, %v; want false and an error", ok, err)
	}
	requireFree(t, ks, "after the refused calls", keys...)
}
