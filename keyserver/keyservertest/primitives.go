package keyservertest

import (
	"context"
	"errors"
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

// primitiveChecks are the checks of keyserver.Semaphorer, RWLocker and
// Elector; a server that does not implement one passes its checks.
func (s *suite) primitiveChecks() []check {
	return []check{
		{"PermitSlotsAreLocks", s.permitSlotsAreLocks},
		{"PermitCountIsStored", s.permitCountIsStored},
		{"PermitReleaseWakes", s.permitReleaseWakes},
		{"PermitArguments", s.permitArguments},
		{"ReadersShareWritersExclude", s.readersShareWritersExclude},
		{"WaitingWriterKeepsReadersOut", s.waitingWriterKeepsReadersOut},
		{"ReadHoldsEndOneByOne", s.readHoldsEndOneByOne},
		{"LeaderKeepsValueAndTerm", s.leaderKeepsValueAndTerm},
		{"LeaderChangeWakes", s.leaderChangeWakes},
	}
}

// watchOf starts a watch with start, stopped when the test ends.
func watchOf(t *testing.T, what string, start func(context.Context, string) (<-chan struct{}, func(), error), key string) <-chan struct{} {
	t.Helper()
	ch, stop, err := start(context.Background(), key)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	t.Cleanup(stop)
	return ch
}

// semaphorer returns ks as a Semaphorer, if it is one, and the key of the
// semaphore named key.
func semaphorer(ks keyserver.KeyServer, key string) (keyserver.Semaphorer, string, bool) {
	ss, ok := ks.(keyserver.Semaphorer)
	return ss, layout.SemaphoreKey(key), ok
}

// elector returns ks as an Elector, if it is one, and the key of the
// election named key.
func elector(ks keyserver.KeyServer, key string) (keyserver.Elector, string, bool) {
	es, ok := ks.(keyserver.Elector)
	return es, layout.ElectionKey(key), ok
}

// permitSlotsAreLocks checks that each slot of a semaphore is held by one
// token at a time, owner-checked like a lock key, and that a refusal lists
// the free slots and the soonest TTL.
func (s *suite) permitSlotsAreLocks(t *testing.T, ks keyserver.KeyServer, key string) {
	name := key
	ss, key, ok := semaphorer(ks, key)
	if !ok {
		return
	}
	ctx := context.Background()
	take := func(what string, slot int, token string, want bool) keyserver.Permits {
		t.Helper()
		return permit(t, what, ss, key, 3, slot, token, want)
	}
	take("AcquirePermit(slot 0, a)", 0, "a", true)
	take("AcquirePermit(slot 0, a) again by its holder", 0, "a", true)
	p := take("AcquirePermit(slot 0, b) held by a", 0, "b", false)
	if !slices.Equal(p.Free, []int{1, 2}) || p.Left <= 0 || p.Left > ttl {
		t.Fatalf("refusal with slot 0 held of 3 = %+v; want Free [1 2] and 0 < Left ≤ %v", p, ttl)
	}
	take("AcquirePermit(slot 1, b)", 1, "b", true)
	expect(t, "ExtendPermit(slot 0, b) held by a", false)(ss.ExtendPermit(ctx, key, 0, "b", ttl))
	expect(t, "ExtendPermit(slot 0, a)", true)(ss.ExtendPermit(ctx, key, 0, "a", ttl))
	expect(t, "ReleasePermit(slot 0, b) held by a", false)(ss.ReleasePermit(ctx, key, 0, "b"))
	expect(t, "ReleasePermit(slot 1, a) held by b", false)(ss.ReleasePermit(ctx, key, 1, "a"))
	expect(t, "ReleasePermit(slot 0, a)", true)(ss.ReleasePermit(ctx, key, 0, "a"))
	take("AcquirePermit(slot 0, c) after a's release", 0, "c", true)
	expect(t, "ExtendPermit(slot 2, d) of a free slot", true)(ss.ExtendPermit(ctx, key, 2, "d", ttl))
	p = take("AcquirePermit(slot 2, e) of the slot d stored again", 2, "e", false)
	if len(p.Free) != 0 {
		t.Fatalf("refusal with every slot held = %+v; want no free slot", p)
	}
	if ok, err := ks.Acquire(ctx, name, "x", ttl); err != nil || !ok {
		t.Fatalf("Acquire of the lock of the semaphore's name = %v, %v; want true: they keep their own keys", ok, err)
	}
	expect(t, "Release(x)", true)(ks.Release(ctx, name, "x"))
	for slot, token := range []string{"c", "b", "d"} {
		expect(t, "ReleasePermit("+token+")", true)(ss.ReleasePermit(ctx, key, slot, token))
	}
}

// permit checks one AcquirePermit of a semaphore of permits, and returns
// what it reported.
func permit(t *testing.T, what string, ss keyserver.Semaphorer, key string, permits, slot int, token string, want bool) keyserver.Permits {
	t.Helper()
	ok, p, err := ss.AcquirePermit(context.Background(), key, permits, slot, token, ttl)
	if err != nil || ok != want {
		t.Fatalf("%s = %v, %+v, %v; want %v, nil", what, ok, p, err, want)
	}
	return p
}

// permitCountIsStored checks that the permit count binds while a slot is
// held, and is replaced once none is.
func (s *suite) permitCountIsStored(t *testing.T, ks keyserver.KeyServer, key string) {
	ss, key, ok := semaphorer(ks, key)
	if !ok {
		return
	}
	ctx := context.Background()
	permit(t, "AcquirePermit(3 permits, slot 0)", ss, key, 3, 0, "a", true)
	ok, _, err := ss.AcquirePermit(ctx, key, 5, 4, "b", ttl)
	if ok || !errors.Is(err, keyserver.ErrPermitsDiffer) || !errors.Is(err, keyserver.ErrPermanent) {
		t.Fatalf("AcquirePermit(5 permits) while held with 3 = %v, %v; want false, ErrPermitsDiffer and ErrPermanent", ok, err)
	}
	expect(t, "ReleasePermit(a)", true)(ss.ReleasePermit(ctx, key, 0, "a"))
	permit(t, "AcquirePermit(5 permits, slot 4) once no slot was held", ss, key, 5, 4, "b", true)
	expect(t, "ReleasePermit(b)", true)(ss.ReleasePermit(ctx, key, 4, "b"))
}

// permitReleaseWakes checks that a release of a slot wakes the
// semaphore's watches, and a refusal does not.
func (s *suite) permitReleaseWakes(t *testing.T, ks keyserver.KeyServer, key string) {
	ss, key, ok := semaphorer(ks, key)
	if !ok {
		return
	}
	ctx := context.Background()
	permit(t, "AcquirePermit(a)", ss, key, 1, 0, "a", true)
	changed := watchOf(t, "WatchPermits", func(ctx context.Context, key string) (<-chan struct{}, func(), error) {
		return ss.WatchPermits(ctx, key, "b")
	}, key)
	permit(t, "AcquirePermit(b) of a full semaphore", ss, key, 1, 0, "b", false)
	quiet(t, "a refused AcquirePermit", changed)
	expect(t, "ReleasePermit(a)", true)(ss.ReleasePermit(ctx, key, 0, "a"))
	awaitClosed(t, "WatchPermits after ReleasePermit", changed)
}

// permitArguments checks that AcquirePermit refuses a permit count under
// one and a slot outside the permits.
func (s *suite) permitArguments(t *testing.T, ks keyserver.KeyServer, key string) {
	ss, key, ok := semaphorer(ks, key)
	if !ok {
		return
	}
	ctx := context.Background()
	for _, c := range []struct {
		what          string
		permits, slot int
		key, token    string
		ttl           time.Duration
	}{
		{"0 permits", 0, 0, key, "a", ttl},
		{"a slot past the permits", 2, 2, key, "a", ttl},
		{"a negative slot", 2, -1, key, "a", ttl},
		{"an empty key", 2, 0, "", "a", ttl},
		{"an empty token", 2, 0, key, "", ttl},
		{"a sub-millisecond TTL", 2, 0, key, "a", time.Millisecond - 1},
	} {
		if ok, _, err := ss.AcquirePermit(ctx, c.key, c.permits, c.slot, c.token, c.ttl); ok || !errors.Is(err, keyserver.ErrInvalidArgument) {
			t.Errorf("AcquirePermit with %s = %v, %v; want false and ErrInvalidArgument", c.what, ok, err)
		}
	}
	if ok, err := ss.ReleasePermit(ctx, key, -1, "a"); ok || !errors.Is(err, keyserver.ErrInvalidArgument) {
		t.Errorf("ReleasePermit of slot -1 = %v, %v; want false and ErrInvalidArgument", ok, err)
	}
}

// rw is an RWLocker under test with the helpers of its checks.
type rw struct {
	t         *testing.T
	rs        keyserver.RWLocker
	key, name string // layout.RWKey(name), and name
}

func (r rw) read(what, token string, want bool) keyserver.Holder {
	r.t.Helper()
	ok, h, err := r.rs.AcquireRead(context.Background(), r.key, token, ttl)
	if err != nil || ok != want {
		r.t.Fatalf("%s = %v, %+v, %v; want %v, nil", what, ok, h, err, want)
	}
	return h
}

func (r rw) write(what, token string, wait, want bool) keyserver.Holder {
	r.t.Helper()
	ok, h, err := r.rs.AcquireWrite(context.Background(), r.key, token, ttl, wait)
	if err != nil || ok != want {
		r.t.Fatalf("%s = %v, %+v, %v; want %v, nil", what, ok, h, err, want)
	}
	return h
}

func (r rw) release(what, token string, write, want bool) {
	r.t.Helper()
	expect(r.t, what, want)(r.rs.ReleaseHold(context.Background(), r.key, token, write))
}

func rwLocker(t *testing.T, ks keyserver.KeyServer, key string) (rw, bool) {
	rs, ok := ks.(keyserver.RWLocker)
	return rw{t: t, rs: rs, key: layout.RWKey(key), name: key}, ok
}

// readersShareWritersExclude checks the modes: readers together, a
// writer alone.
func (s *suite) readersShareWritersExclude(t *testing.T, ks keyserver.KeyServer, key string) {
	r, ok := rwLocker(t, ks, key)
	if !ok {
		return
	}
	r.read("AcquireRead(r1)", "r1", true)
	r.read("AcquireRead(r2) beside r1", "r2", true)
	if h := r.write("AcquireWrite(w) while read", "w", false, false); h.Left <= 0 {
		t.Fatalf("refused AcquireWrite reported Left %v; want the readers' TTL", h.Left)
	}
	r.read("AcquireRead(r3): a writer that does not wait keeps nobody out", "r3", true)
	for _, tok := range []string{"r1", "r2", "r3"} {
		r.release("ReleaseHold(reader "+tok+")", tok, false, true)
	}
	r.write("AcquireWrite(w) once the readers left", "w", false, true)
	r.write("AcquireWrite(w) again by its holder", "w", false, true)
	r.write("AcquireWrite(v) while w writes", "v", false, false)
	if h := r.read("AcquireRead(r1) while w writes", "r1", false); h.Left <= 0 {
		t.Fatalf("refused AcquireRead reported Left %v; want the writer's TTL", h.Left)
	}
	r.release("ReleaseHold(w as a reader)", "w", false, false)
	r.release("ReleaseHold(v) which does not write", "v", true, false)
	r.release("ReleaseHold(w)", "w", true, true)
	r.read("AcquireRead(r1) after the writer left", "r1", true)
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
	ctx := context.Background()
	w1, w2 := ranked(1, 1), ranked(1, 2) // two attempts of one writer's call
	r.read("AcquireRead(r1)", "r1", true)
	r.write("AcquireWrite(w, wait) while read", w1, true, false)
	r.read("AcquireRead(r2) while a writer waits", "r2", false)
	expect(t, "ExtendHold(r1) while a writer waits", true)(r.rs.ExtendHold(ctx, r.key, "r1", ttl, false))
	changed := watchOf(t, "WatchHolds", func(ctx context.Context, key string) (<-chan struct{}, func(), error) {
		return r.rs.WatchHolds(ctx, key, w1, true)
	}, r.key)
	r.release("ReleaseHold(r1)", "r1", false, true)
	awaitClosed(t, "WatchHolds after a reader's release", changed)
	r.write("AcquireWrite(w) by its next attempt", w2, true, true)
	r.release("ReleaseHold(w)", w2, true, true)
	r.read("AcquireRead(r2): the granted writer took its mark away", "r2", true)
	r.write("AcquireWrite(v, wait) while read", ranked(2, 1), true, false)
	s.wait(keyserver.WriterWaitTTL + s.d(100*time.Millisecond))
	r.read("AcquireRead(r3) once the waiting writer's mark lapsed", "r3", true)
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
	if ok, _, err := r.rs.AcquireRead(ctx, r.key, "r1", short); err != nil || !ok {
		t.Fatalf("AcquireRead(r1, %v) = %v, %v; want true", short, ok, err)
	}
	r.read("AcquireRead(r2)", "r2", true)
	r.release("ReleaseHold(r2)", "r2", false, true)
	r.release("ReleaseHold(r2) again", "r2", false, false)
	r.write("AcquireWrite(w) while r1 reads", "w", false, false)
	s.wait(short + s.d(100*time.Millisecond))
	expect(t, "ExtendHold(w as a reader) of a key nobody writes", true)(r.rs.ExtendHold(ctx, r.key, "w", ttl, false))
	r.release("ReleaseHold(r1) after its TTL ran out", "r1", false, false)
	r.release("ReleaseHold(w as a reader)", "w", false, true)
	r.write("AcquireWrite(w) once every reader left or expired", "w", false, true)
	expect(t, "ExtendHold(w)", true)(r.rs.ExtendHold(ctx, r.key, "w", ttl, true))
	expect(t, "ExtendHold(r1) as a reader while w writes", false)(r.rs.ExtendHold(ctx, r.key, "r1", ttl, false))
	r.release("ReleaseHold(w)", "w", true, true)
}

// leaderKeepsValueAndTerm checks an Elector's leader key: one token at a
// time, its value read back with its TTL, the fence counter read with the
// vote.
func (s *suite) leaderKeepsValueAndTerm(t *testing.T, ks keyserver.KeyServer, key string) {
	name := key
	es, key, ok := elector(ks, key)
	if !ok {
		return
	}
	ctx := context.Background()
	read := func(what string, want keyserver.Leadership) {
		t.Helper()
		got, err := es.ReadLeader(ctx, key)
		if err != nil || got.Token != want.Token || got.Value != want.Value || (want.Token != "" && (got.Left <= 0 || got.Left > ttl)) {
			t.Fatalf("%s = %+v, %v; want %+v with 0 < Left ≤ %v", what, got, err, want, ttl)
		}
	}
	lead := func(what, token, value string, want bool, wantFence uint64) {
		t.Helper()
		ok, fence, err := es.AcquireLeader(ctx, key, token, value, ttl)
		if err != nil || ok != want || fence != wantFence {
			t.Fatalf("%s = %v, %d, %v; want %v, %d, nil", what, ok, fence, err, want, wantFence)
		}
	}
	read("ReadLeader with nobody leading", keyserver.Leadership{})
	lead("AcquireLeader(a)", "a", "host-a", true, 0)
	read("ReadLeader", keyserver.Leadership{Token: "a", Value: "host-a"})
	if prev, err := es.RaiseFence(ctx, key, 4); err != nil || prev != 0 {
		t.Fatalf("RaiseFence(4) = %d, %v; want 0", prev, err)
	}
	lead("AcquireLeader(b) while a leads", "b", "host-b", false, 4)
	expect(t, "ExtendLeader(b) while a leads", false)(es.ExtendLeader(ctx, key, "b", "host-b", ttl))
	expect(t, "ExtendLeader(a)", true)(es.ExtendLeader(ctx, key, "a", "host-a", ttl))
	expect(t, "ReleaseLeader(b)", false)(es.ReleaseLeader(ctx, key, "b"))
	expect(t, "ReleaseLeader(a)", true)(es.ReleaseLeader(ctx, key, "a"))
	read("ReadLeader after the release", keyserver.Leadership{})
	lead("AcquireLeader(b) after a resigned", "b", "host-b", true, 4)
	read("ReadLeader", keyserver.Leadership{Token: "b", Value: "host-b"})
	if ok, err := ks.Acquire(ctx, name, "x", ttl); err != nil || !ok {
		t.Fatalf("Acquire of the lock of the election's name = %v, %v; want true", ok, err)
	}
	expect(t, "Release(x)", true)(ks.Release(ctx, name, "x"))
	expect(t, "ReleaseLeader(b)", true)(es.ReleaseLeader(ctx, key, "b"))
	if ok, _, err := es.AcquireLeader(ctx, key, "c", "", ttl); ok || !errors.Is(err, keyserver.ErrInvalidArgument) {
		t.Errorf("AcquireLeader with an empty value = %v, %v; want false and ErrInvalidArgument", ok, err)
	}
	if _, err := es.ReadLeader(ctx, ""); !errors.Is(err, keyserver.ErrInvalidArgument) {
		t.Errorf("ReadLeader with an empty key = %v; want ErrInvalidArgument", err)
	}
}

// leaderChangeWakes checks that a new leader and a resignation wake the
// election's watches, and an extension by the leader does not.
func (s *suite) leaderChangeWakes(t *testing.T, ks keyserver.KeyServer, key string) {
	es, key, ok := elector(ks, key)
	if !ok {
		return
	}
	ctx := context.Background()
	changed := watchOf(t, "WatchLeader", es.WatchLeader, key)
	if ok, _, err := es.AcquireLeader(ctx, key, "a", "host-a", ttl); err != nil || !ok {
		t.Fatalf("AcquireLeader(a) = %v, %v; want true", ok, err)
	}
	awaitClosed(t, "WatchLeader after a new leader", changed)
	changed = watchOf(t, "WatchLeader", es.WatchLeader, key)
	expect(t, "ExtendLeader(a)", true)(es.ExtendLeader(ctx, key, "a", "host-a", ttl))
	quiet(t, "an extension by the leader", changed)
	expect(t, "ReleaseLeader(a)", true)(es.ReleaseLeader(ctx, key, "a"))
	awaitClosed(t, "WatchLeader after the leader resigned", changed)
}
