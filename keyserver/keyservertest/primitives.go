package keyservertest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/goredlock/goredlock/internal/layout"
	"github.com/goredlock/goredlock/keyserver"
)

// check is one conformance check: a subtest on a fresh server and key.
type check = struct {
	name string
	fn   func(*testing.T, keyserver.KeyServer, string)
}

// primitiveChecks are the checks of keyserver.HoldKeeper; a server that
// does not implement it passes them, and one that is not also a Fencer
// passes the elections' checks (the redlock client's elections need both).
func (s *suite) primitiveChecks() []check {
	return []check{
		{"PermitSlotsAreLocks", s.permitSlotsAreLocks},
		{"PermitCountIsStored", s.permitCountIsStored},
		{"PermitReleaseWakes", s.permitReleaseWakes},
		{"HoldArguments", s.holdArguments},
		{"ReadersShareWritersExclude", s.readersShareWritersExclude},
		{"WaitingWriterKeepsReadersOut", s.waitingWriterKeepsReadersOut},
		{"ReadHoldsEndOneByOne", s.readHoldsEndOneByOne},
		{"LeaderKeepsValueAndTerm", s.leaderKeepsValueAndTerm},
		{"LeaderChangeWakes", s.leaderChangeWakes},
	}
}

// watchOf starts a watch of h, stopped when the test ends.
func watchOf(t *testing.T, what string, hk keyserver.HoldKeeper, h keyserver.HoldSpec) <-chan struct{} {
	t.Helper()
	ch, stop, err := hk.WatchHolds(context.Background(), h)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	t.Cleanup(stop)
	return ch
}

// sem is a semaphore of a HoldKeeper under test.
type sem struct {
	hk  keyserver.HoldKeeper
	key string // layout.SemaphoreKey of the name
}

// semaphorer returns ks's semaphore named key, if ks is a HoldKeeper.
func semaphorer(ks keyserver.KeyServer, key string) (sem, bool) {
	hk, ok := ks.(keyserver.HoldKeeper)
	return sem{hk: hk, key: layout.SemaphoreKey(key)}, ok
}

// slot is the hold of slot of a semaphore of permits by token.
func (m sem) slot(permits, slot int, token string) keyserver.HoldSpec {
	return keyserver.HoldSpec{Kind: keyserver.PermitHold, Key: m.key, Token: token, Permits: permits, Slot: slot}
}

func (m sem) extend(permits, slot int, token string) (bool, error) {
	return m.hk.ExtendHold(context.Background(), m.slot(permits, slot, token), ttl)
}

func (m sem) release(permits, slot int, token string) (bool, error) {
	return m.hk.ReleaseHold(context.Background(), m.slot(permits, slot, token))
}

// elector returns ks as a HoldKeeper and a Fencer, if it is both, and the
// key of the election named key.
func elector(ks keyserver.KeyServer, key string) (keyserver.HoldKeeper, keyserver.Fencer, string, bool) {
	hk, ok := ks.(keyserver.HoldKeeper)
	fs, fok := ks.(keyserver.Fencer)
	return hk, fs, layout.ElectionKey(key), ok && fok
}

// leadership is the LeaderHold of key by token with value.
func leadership(key, token, value string) keyserver.HoldSpec {
	return keyserver.HoldSpec{Kind: keyserver.LeaderHold, Key: key, Token: token, Value: value}
}

// permitSlotsAreLocks checks that each slot of a semaphore is held by one
// token at a time, owner-checked like a lock key, and that a refusal lists
// the free slots and the soonest TTL.
func (s *suite) permitSlotsAreLocks(t *testing.T, ks keyserver.KeyServer, key string) {
	name := key
	m, ok := semaphorer(ks, key)
	if !ok {
		return
	}
	ctx := context.Background()
	take := func(what string, slot int, token string, want bool) keyserver.HoldReply {
		t.Helper()
		return permit(t, what, m, 3, slot, token, want)
	}
	take("AcquireHold(slot 0, a)", 0, "a", true)
	take("AcquireHold(slot 0, a) again by its holder", 0, "a", true)
	p := take("AcquireHold(slot 0, b) held by a", 0, "b", false)
	if !slices.Equal(p.Free, []int{1, 2}) || p.Left <= 0 || p.Left > ttl {
		t.Fatalf("refusal with slot 0 held of 3 = %+v; want Free [1 2] and 0 < Left ≤ %v", p, ttl)
	}
	take("AcquireHold(slot 1, b)", 1, "b", true)
	expect(t, "ExtendHold(slot 0, b) held by a", false)(m.extend(3, 0, "b"))
	expect(t, "ExtendHold(slot 0, a)", true)(m.extend(3, 0, "a"))
	expect(t, "ReleaseHold(slot 0, b) held by a", false)(m.release(3, 0, "b"))
	expect(t, "ReleaseHold(slot 1, a) held by b", false)(m.release(3, 1, "a"))
	expect(t, "ReleaseHold(slot 0, a)", true)(m.release(3, 0, "a"))
	take("AcquireHold(slot 0, c) after a's release", 0, "c", true)
	expect(t, "ExtendHold(slot 2, d) of a free slot", true)(m.extend(3, 2, "d"))
	p = take("AcquireHold(slot 2, e) of the slot d stored again", 2, "e", false)
	if len(p.Free) != 0 {
		t.Fatalf("refusal with every slot held = %+v; want no free slot", p)
	}
	if ok, err := ks.Acquire(ctx, name, "x", ttl); err != nil || !ok {
		t.Fatalf("Acquire of the lock of the semaphore's name = %v, %v; want true: they keep their own keys", ok, err)
	}
	expect(t, "Release(x)", true)(ks.Release(ctx, name, "x"))
	for slot, token := range []string{"c", "b", "d"} {
		expect(t, "ReleaseHold("+token+")", true)(m.release(3, slot, token))
	}
}

// permit checks one AcquireHold of slot of a semaphore of permits, and
// returns what it reported.
func permit(t *testing.T, what string, m sem, permits, slot int, token string, want bool) keyserver.HoldReply {
	t.Helper()
	ok, p, err := m.hk.AcquireHold(context.Background(), m.slot(permits, slot, token), ttl)
	if err != nil || ok != want {
		t.Fatalf("%s = %v, %+v, %v; want %v, nil", what, ok, p, err, want)
	}
	return p
}

// permitCountIsStored checks that the permit count binds while a slot is
// held, and is replaced once none is.
func (s *suite) permitCountIsStored(t *testing.T, ks keyserver.KeyServer, key string) {
	m, ok := semaphorer(ks, key)
	if !ok {
		return
	}
	permit(t, "AcquireHold(3 permits, slot 0)", m, 3, 0, "a", true)
	ok, _, err := m.hk.AcquireHold(context.Background(), m.slot(5, 4, "b"), ttl)
	if ok || !errors.Is(err, keyserver.ErrPermitsDiffer) || !errors.Is(err, keyserver.ErrPermanent) {
		t.Fatalf("AcquireHold(5 permits) while held with 3 = %v, %v; want false, ErrPermitsDiffer and ErrPermanent", ok, err)
	}
	expect(t, "ReleaseHold(a)", true)(m.release(3, 0, "a"))
	permit(t, "AcquireHold(5 permits, slot 4) once no slot was held", m, 5, 4, "b", true)
	expect(t, "ReleaseHold(b)", true)(m.release(5, 4, "b"))
}

// permitReleaseWakes checks that a release of a slot wakes the
// semaphore's watches, and a refusal does not.
func (s *suite) permitReleaseWakes(t *testing.T, ks keyserver.KeyServer, key string) {
	m, ok := semaphorer(ks, key)
	if !ok {
		return
	}
	permit(t, "AcquireHold(a)", m, 1, 0, "a", true)
	changed := watchOf(t, "WatchHolds(b)", m.hk, m.slot(1, 0, "b"))
	permit(t, "AcquireHold(b) of a full semaphore", m, 1, 0, "b", false)
	quiet(t, "a refused AcquireHold", changed)
	expect(t, "ReleaseHold(a)", true)(m.release(1, 0, "a"))
	awaitClosed(t, "WatchHolds after ReleaseHold", changed)
}

// holdArguments checks that every call refuses a hold of no known kind,
// that AcquireHold refuses a permit count under one and a slot outside
// the permits, and a leadership with no value.
func (s *suite) holdArguments(t *testing.T, ks keyserver.KeyServer, key string) {
	m, ok := semaphorer(ks, key)
	if !ok {
		return
	}
	ctx := context.Background()
	invalid := func(what string, ok bool, err error) {
		t.Helper()
		if ok || !errors.Is(err, keyserver.ErrInvalidArgument) {
			t.Errorf("%s = %v, %v; want false and ErrInvalidArgument", what, ok, err)
		}
	}
	for _, c := range []struct {
		what          string
		permits, slot int
		key, token    string
		ttl           time.Duration
	}{
		{"0 permits", 0, 0, m.key, "a", ttl},
		{"a slot past the permits", 2, 2, m.key, "a", ttl},
		{"a negative slot", 2, -1, m.key, "a", ttl},
		{"an empty key", 2, 0, "", "a", ttl},
		{"an empty token", 2, 0, m.key, "", ttl},
		{"a sub-millisecond TTL", 2, 0, m.key, "a", time.Millisecond - 1},
		{"a zero TTL", 2, 0, m.key, "a", 0},
	} {
		h := keyserver.HoldSpec{Kind: keyserver.PermitHold, Key: c.key, Token: c.token, Permits: c.permits, Slot: c.slot}
		ok, _, err := m.hk.AcquireHold(ctx, h, c.ttl)
		invalid("AcquireHold of a permit with "+c.what, ok, err)
	}
	ok, err := m.release(2, -1, "a")
	invalid("ReleaseHold of slot -1", ok, err)
	for _, k := range []keyserver.HoldKind{0, keyserver.LeaderHold + 1} {
		h := keyserver.HoldSpec{Kind: k, Key: layout.RWKey(key), Token: "a"}
		ok, _, err := m.hk.AcquireHold(ctx, h, ttl)
		invalid(fmt.Sprintf("AcquireHold of kind %d", k), ok, err)
		ok, err = m.hk.ExtendHold(ctx, h, ttl)
		invalid(fmt.Sprintf("ExtendHold of kind %d", k), ok, err)
		ok, err = m.hk.ReleaseHold(ctx, h)
		invalid(fmt.Sprintf("ReleaseHold of kind %d", k), ok, err)
		if _, _, err := m.hk.WatchHolds(ctx, h); !errors.Is(err, keyserver.ErrInvalidArgument) {
			t.Errorf("WatchHolds of kind %d = %v; want ErrInvalidArgument", k, err)
		}
	}
	ok, _, err = m.hk.AcquireHold(ctx, leadership(layout.ElectionKey(key), "c", ""), ttl)
	invalid("AcquireHold of a leadership with an empty value", ok, err)
}

// rw is a read-write lock of a HoldKeeper under test with the helpers of
// its checks.
type rw struct {
	t         *testing.T
	hk        keyserver.HoldKeeper
	key, name string // layout.RWKey(name), and name
}

// hold is token's hold of the lock of kind.
func (r rw) hold(kind keyserver.HoldKind, token string) keyserver.HoldSpec {
	return keyserver.HoldSpec{Kind: kind, Key: r.key, Token: token}
}

func (r rw) acquire(what string, kind keyserver.HoldKind, token string, want bool) keyserver.HoldReply {
	r.t.Helper()
	ok, h, err := r.hk.AcquireHold(context.Background(), r.hold(kind, token), ttl)
	if err != nil || ok != want {
		r.t.Fatalf("%s = %v, %+v, %v; want %v, nil", what, ok, h, err, want)
	}
	return h
}

func (r rw) read(what, token string, want bool) keyserver.HoldReply {
	r.t.Helper()
	return r.acquire(what, keyserver.ReadHold, token, want)
}

// write acquires a WaitingWriteHold if wait, else a WriteHold.
func (r rw) write(what, token string, wait, want bool) keyserver.HoldReply {
	r.t.Helper()
	return r.acquire(what, writeKind(wait, true), token, want)
}

func (r rw) extend(token string, write bool) (bool, error) {
	return r.hk.ExtendHold(context.Background(), r.hold(writeKind(false, write), token), ttl)
}

func (r rw) release(what, token string, write, want bool) {
	r.t.Helper()
	expect(r.t, what, want)(r.hk.ReleaseHold(context.Background(), r.hold(writeKind(false, write), token)))
}

// writeKind is the kind of a waiting writer's hold, a writer's or a
// reader's.
func writeKind(wait, write bool) keyserver.HoldKind {
	switch {
	case wait:
		return keyserver.WaitingWriteHold
	case write:
		return keyserver.WriteHold
	}
	return keyserver.ReadHold
}

func rwLocker(t *testing.T, ks keyserver.KeyServer, key string) (rw, bool) {
	hk, ok := ks.(keyserver.HoldKeeper)
	return rw{t: t, hk: hk, key: layout.RWKey(key), name: key}, ok
}

// readersShareWritersExclude checks the modes: readers together, a
// writer alone.
func (s *suite) readersShareWritersExclude(t *testing.T, ks keyserver.KeyServer, key string) {
	r, ok := rwLocker(t, ks, key)
	if !ok {
		return
	}
	r.read("AcquireHold(read r1)", "r1", true)
	r.read("AcquireHold(read r2) beside r1", "r2", true)
	if h := r.write("AcquireHold(write w) while read", "w", false, false); h.Left <= 0 {
		t.Fatalf("refused write AcquireHold reported Left %v; want the readers' TTL", h.Left)
	}
	r.read("AcquireHold(read r3): a writer that does not wait keeps nobody out", "r3", true)
	for _, tok := range []string{"r1", "r2", "r3"} {
		r.release("ReleaseHold(read "+tok+")", tok, false, true)
	}
	r.write("AcquireHold(write w) once the readers left", "w", false, true)
	r.write("AcquireHold(write w) again by its holder", "w", false, true)
	r.write("AcquireHold(write v) while w writes", "v", false, false)
	if h := r.read("AcquireHold(read r1) while w writes", "r1", false); h.Left <= 0 {
		t.Fatalf("refused read AcquireHold reported Left %v; want the writer's TTL", h.Left)
	}
	r.release("ReleaseHold(w as a reader)", "w", false, false)
	r.release("ReleaseHold(v) which does not write", "v", true, false)
	r.release("ReleaseHold(w)", "w", true, true)
	r.read("AcquireHold(read r1) after the writer left", "r1", true)
	r.release("ReleaseHold(r1)", "r1", false, true)
	if ok, err := ks.Acquire(context.Background(), r.name, "x", ttl); err != nil || !ok {
		t.Fatalf("Acquire of the lock of the read-write lock's name = %v, %v; want true", ok, err)
	}
	expect(t, "Release(x)", true)(ks.Release(context.Background(), r.name, "x"))
}

// waitingWriterKeepsReadersOut checks the waiting writer's mark: new
// readers are refused, held ones extended, the writer granted when they
// leave, and a mark that is not renewed lapses.
func (s *suite) waitingWriterKeepsReadersOut(t *testing.T, ks keyserver.KeyServer, key string) {
	r, ok := rwLocker(t, ks, key)
	if !ok {
		return
	}
	w1, w2 := ranked(1, 1), ranked(1, 2) // two attempts of one writer's call
	r.read("AcquireHold(read r1)", "r1", true)
	r.write("AcquireHold(write w, wait) while read", w1, true, false)
	r.read("AcquireHold(read r2) while a writer waits", "r2", false)
	expect(t, "ExtendHold(r1) while a writer waits", true)(r.extend("r1", false))
	changed := watchOf(t, "WatchHolds", r.hk, r.hold(keyserver.WaitingWriteHold, w1))
	r.release("ReleaseHold(r1)", "r1", false, true)
	awaitClosed(t, "WatchHolds after a reader's release", changed)
	r.write("AcquireHold(write w) by its next attempt", w2, true, true)
	r.release("ReleaseHold(w)", w2, true, true)
	r.read("AcquireHold(read r2): the granted writer took its mark away", "r2", true)
	r.write("AcquireHold(write v, wait) while read", ranked(2, 1), true, false)
	s.wait(keyserver.WriterWaitTTL + s.d(100*time.Millisecond))
	r.read("AcquireHold(read r3) once the waiting writer's mark lapsed", "r3", true)
	r.release("ReleaseHold(r2)", "r2", false, true)
	r.release("ReleaseHold(r3)", "r3", false, true)
}

// readHoldsEndOneByOne checks that each reader's hold is extended,
// expires and is released on its own.
func (s *suite) readHoldsEndOneByOne(t *testing.T, ks keyserver.KeyServer, key string) {
	r, ok := rwLocker(t, ks, key)
	if !ok {
		return
	}
	ctx := context.Background()
	short := s.d(300 * time.Millisecond)
	for ; ; short *= 2 {
		began := time.Now()
		if ok, _, err := r.hk.AcquireHold(ctx, r.hold(keyserver.ReadHold, "r1"), short); err != nil || !ok {
			t.Fatalf("AcquireHold(read r1, %v) = %v, %v; want true", short, ok, err)
		}
		r.read("AcquireHold(read r2)", "r2", true)
		r.release("ReleaseHold(r2)", "r2", false, true)
		r.release("ReleaseHold(r2) again", "r2", false, false)
		ok, _, err := r.hk.AcquireHold(ctx, r.hold(keyserver.WriteHold, "w"), ttl)
		if s.overran(began, short) {
			r.hk.ReleaseHold(ctx, r.hold(keyserver.WriteHold, "w"))
			r.hk.ReleaseHold(ctx, r.hold(keyserver.ReadHold, "r1"))
			continue
		}
		expect(t, "AcquireHold(write w) while r1 reads", false)(ok, err)
		break
	}
	s.wait(short + s.d(100*time.Millisecond))
	expect(t, "ExtendHold(w as a reader) of a key nobody writes", true)(r.extend("w", false))
	r.release("ReleaseHold(r1) after its TTL ran out", "r1", false, false)
	r.release("ReleaseHold(w as a reader)", "w", false, true)
	r.write("AcquireHold(write w) once every reader left or expired", "w", false, true)
	expect(t, "ExtendHold(w)", true)(r.extend("w", true))
	expect(t, "ExtendHold(r1) as a reader while w writes", false)(r.extend("r1", false))
	r.release("ReleaseHold(w)", "w", true, true)
}

// leaderKeepsValueAndTerm checks a HoldKeeper's leader key: one token at
// a time, its value read back with its TTL, the fence counter read with
// the vote.
func (s *suite) leaderKeepsValueAndTerm(t *testing.T, ks keyserver.KeyServer, key string) {
	name := key
	hk, fs, key, ok := elector(ks, key)
	if !ok {
		return
	}
	ctx := context.Background()
	read := func(what string, want keyserver.Leadership) {
		t.Helper()
		got, err := hk.ReadLeader(ctx, key)
		if err != nil || got.Token != want.Token || got.Value != want.Value || (want.Token != "" && (got.Left <= 0 || got.Left > ttl)) {
			t.Fatalf("%s = %+v, %v; want %+v with 0 < Left ≤ %v", what, got, err, want, ttl)
		}
	}
	lead := func(what, token, value string, want bool, wantFence uint64) {
		t.Helper()
		ok, h, err := hk.AcquireHold(ctx, leadership(key, token, value), ttl)
		if err != nil || ok != want || h.Fence != wantFence {
			t.Fatalf("%s = %v, %+v, %v; want %v, Fence %d, nil", what, ok, h, err, want, wantFence)
		}
	}
	extend := func(token, value string) (bool, error) { return hk.ExtendHold(ctx, leadership(key, token, value), ttl) }
	resign := func(token string) (bool, error) { return hk.ReleaseHold(ctx, leadership(key, token, "")) }
	read("ReadLeader with nobody leading", keyserver.Leadership{})
	lead("AcquireHold(leader a)", "a", "host-a", true, 0)
	read("ReadLeader", keyserver.Leadership{Token: "a", Value: "host-a"})
	if prev, err := fs.RaiseFence(ctx, key, 4); err != nil || prev != 0 {
		t.Fatalf("RaiseFence(4) = %d, %v; want 0", prev, err)
	}
	lead("AcquireHold(leader b) while a leads", "b", "host-b", false, 4)
	expect(t, "ExtendHold(leader b) while a leads", false)(extend("b", "host-b"))
	expect(t, "ExtendHold(leader a)", true)(extend("a", "host-a"))
	expect(t, "ReleaseHold(leader b)", false)(resign("b"))
	expect(t, "ReleaseHold(leader a)", true)(resign("a"))
	read("ReadLeader after the release", keyserver.Leadership{})
	lead("AcquireHold(leader b) after a resigned", "b", "host-b", true, 4)
	read("ReadLeader", keyserver.Leadership{Token: "b", Value: "host-b"})
	if ok, err := ks.Acquire(ctx, name, "x", ttl); err != nil || !ok {
		t.Fatalf("Acquire of the lock of the election's name = %v, %v; want true", ok, err)
	}
	expect(t, "Release(x)", true)(ks.Release(ctx, name, "x"))
	expect(t, "ReleaseHold(leader b)", true)(resign("b"))
	if _, err := hk.ReadLeader(ctx, ""); !errors.Is(err, keyserver.ErrInvalidArgument) {
		t.Errorf("ReadLeader with an empty key = %v; want ErrInvalidArgument", err)
	}
}

// leaderChangeWakes checks that a new leader and a resignation wake the
// election's watches, which need no token, and an extension by the leader
// does not.
func (s *suite) leaderChangeWakes(t *testing.T, ks keyserver.KeyServer, key string) {
	hk, _, key, ok := elector(ks, key)
	if !ok {
		return
	}
	ctx := context.Background()
	watch := keyserver.HoldSpec{Kind: keyserver.LeaderHold, Key: key}
	changed := watchOf(t, "WatchHolds(leader)", hk, watch)
	if ok, _, err := hk.AcquireHold(ctx, leadership(key, "a", "host-a"), ttl); err != nil || !ok {
		t.Fatalf("AcquireHold(leader a) = %v, %v; want true", ok, err)
	}
	awaitClosed(t, "WatchHolds(leader) after a new leader", changed)
	changed = watchOf(t, "WatchHolds(leader)", hk, watch)
	expect(t, "ExtendHold(leader a)", true)(hk.ExtendHold(ctx, leadership(key, "a", "host-a"), ttl))
	quiet(t, "an extension by the leader", changed)
	expect(t, "ReleaseHold(leader a)", true)(hk.ReleaseHold(ctx, leadership(key, "a", "")))
	awaitClosed(t, "WatchHolds(leader) after the leader resigned", changed)
}
