// Package keyservertest is the conformance suite for [keyserver.KeyServer]
// implementations. Every server in this module passes it, and a user's own
// server should too before the redlock client is trusted with it:
//
//	func TestConformance(t *testing.T) {
//		keyservertest.Run(t, func(t *testing.T) keyserver.KeyServer {
//			s := mystore.New()
//			t.Cleanup(func() { s.Close() })
//			return s
//		})
//	}
//
// The suite checks set-if-absent, idempotent re-acquire with the same token,
// owner-checked extend and release, extend re-creating a missing key, expiry,
// concurrent takers and invalid input, and the optional interfaces a server
// implements: [keyserver.Fencer]'s counters, [keyserver.Notifier]'s remaining
// TTL, and its line of waiters: served in rank order, one wake per
// release, no turn missed, promises that pass on and lapse;
// [keyserver.Notifier]'s holder told of a waiter; and the
// primitives' holds (primitives.go, [keyserver.HoldKeeper]): a
// semaphore's slots, stored count and wakes, a read-write lock's modes and
// waiting writers, an election's leader, term and wakes;
// [keyserver.SetLocker]'s all-or-nothing sets
// (sets.go), with a Notifier's promises and lines. Keys carry a random prefix,
// so a shared server (one Redis for the whole test run) does no harm.
package keyservertest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/goredlock/goredlock/internal/layout"
	"github.com/goredlock/goredlock/internal/testkit"
	"github.com/goredlock/goredlock/keyserver"
)

// Option adjusts how Run exercises a server.
type Option func(*suite)

// WithAdvance lets the suite move the server's clock instead of sleeping,
// for servers that take their time from a fake clock.
func WithAdvance(advance func(time.Duration)) Option {
	return func(s *suite) { s.advance = advance }
}

// WithTimeScale multiplies the TTLs and waits of the expiry checks, for
// servers slower than a loopback Redis. The default is 1: the expiry checks
// then wait about three seconds in all.
func WithTimeScale(f float64) Option {
	return func(s *suite) { s.scale = f }
}

type suite struct {
	newServer func(*testing.T) keyserver.KeyServer
	advance   func(time.Duration)
	scale     float64
}

// Run runs the conformance suite as subtests of t, calling newServer once per
// subtest.
func Run(t *testing.T, newServer func(t *testing.T) keyserver.KeyServer, opts ...Option) {
	s := &suite{newServer: newServer, scale: 1}
	for _, o := range opts {
		o(s)
	}
	tests := []struct {
		name string
		fn   func(*testing.T, keyserver.KeyServer, string)
	}{
		{"AcquireIsSetIfAbsent", s.acquireIsSetIfAbsent},
		{"ReacquireWithSameTokenRenews", s.reacquireWithSameTokenRenews},
		{"ExtendChecksOwner", s.extendChecksOwner},
		{"ExtendRecreatesMissingKey", s.extendRecreatesMissingKey},
		{"ExtendRenewsTTL", s.extendRenewsTTL},
		{"ReleaseChecksOwner", s.releaseChecksOwner},
		{"KeyExpires", s.keyExpires},
		{"KeysAreIndependent", s.keysAreIndependent},
		{"ConcurrentTakersOneWins", s.concurrentTakersOneWins},
		{"InvalidArguments", s.invalidArguments},
		{"CancelledContext", s.cancelledContext},
		{"FenceCounters", s.fenceCounters},
		{"AcquireOrHolder", s.acquireOrHolder},
		{"LineServesInRankOrder", s.lineServesInRankOrder},
		{"TurnIsNotMissed", s.turnIsNotMissed},
		{"LeaveLinePassesThePromise", s.leaveLinePassesThePromise},
		{"PromiseLapses", s.promiseLapses},
		{"PromiseIsTheCallers", s.promiseIsTheCallers},
		{"ReleaseInLineKeepsThePlace", s.releaseInLineKeepsThePlace},
		{"OnlyAcquireInLineJoins", s.onlyAcquireInLineJoins},
		{"NextJoinsTheLine", s.nextJoinsTheLine},
		{"LineArguments", s.lineArguments},
		{"ContentionIsTold", s.contentionIsTold},
	}
	tests = append(tests, s.primitiveChecks()...)
	tests = append(tests, s.setChecks()...)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.fn(t, s.newServer(t), randomKey(t))
		})
	}
}

const ttl = 10 * time.Second

func (s *suite) acquireIsSetIfAbsent(t *testing.T, ks keyserver.KeyServer, key string) {
	ctx := context.Background()
	expect(t, "Acquire(a) on an absent key", true)(ks.Acquire(ctx, key, "a", ttl))
	expect(t, "Acquire(b) on a key held by a", false)(ks.Acquire(ctx, key, "b", ttl))
	expect(t, "Release(a) after b was refused", true)(ks.Release(ctx, key, "a"))
}

func (s *suite) reacquireWithSameTokenRenews(t *testing.T, ks keyserver.KeyServer, key string) {
	s.renewsTTL(t, ks, key, "Acquire(a) again by its holder", ks.Acquire)
}

func (s *suite) extendChecksOwner(t *testing.T, ks keyserver.KeyServer, key string) {
	ctx := context.Background()
	expect(t, "Acquire(a)", true)(ks.Acquire(ctx, key, "a", ttl))
	expect(t, "Extend(b) of a key held by a", false)(ks.Extend(ctx, key, "b", ttl))
	expect(t, "Release(b) after its refused Extend", false)(ks.Release(ctx, key, "b"))
	expect(t, "Extend(a) by its holder", true)(ks.Extend(ctx, key, "a", ttl))
	expect(t, "Release(a)", true)(ks.Release(ctx, key, "a"))
}

func (s *suite) extendRecreatesMissingKey(t *testing.T, ks keyserver.KeyServer, key string) {
	ctx := context.Background()
	expect(t, "Extend(a) of an absent key", true)(ks.Extend(ctx, key, "a", ttl))
	expect(t, "Acquire(b) of the re-created key", false)(ks.Acquire(ctx, key, "b", ttl))
	expect(t, "Release(a) of the re-created key", true)(ks.Release(ctx, key, "a"))
}

func (s *suite) extendRenewsTTL(t *testing.T, ks keyserver.KeyServer, key string) {
	s.renewsTTL(t, ks, key, "Extend(a)", ks.Extend)
}

// renewsTTL checks that renew, called by the holder past half its TTL,
// keeps the key held past the end of its first TTL.
func (s *suite) renewsTTL(t *testing.T, ks keyserver.KeyServer, key, what string,
	renew func(ctx context.Context, key, token string, ttl time.Duration) (bool, error)) {
	ctx := context.Background()
	for short := s.d(time.Second); ; short *= 2 {
		expect(t, "Acquire(a)", true)(ks.Acquire(ctx, key, "a", short))
		s.wait(short * 6 / 10)
		renewed := time.Now()
		expect(t, what, true)(renew(ctx, key, "a", short))
		s.wait(short * 6 / 10)
		ok, err := ks.Acquire(ctx, key, "b", ttl)
		if s.overran(renewed, short) {
			ks.Release(ctx, key, "a")
			ks.Release(ctx, key, "b")
			continue
		}
		expect(t, "Acquire(b) after "+what+" renewed past the first TTL", false)(ok, err)
		expect(t, "Release(a)", true)(ks.Release(ctx, key, "a"))
		return
	}
}

// overran reports whether a check's round, run on the real clock, took
// ttl or longer since began: a stalled machine let a key lapse that a
// correct server kept, and the round proves nothing. The checks that
// expect a key still held run such a round again with twice the TTL, up
// to 32 times the first, and fail in the last whatever it took.
func (s *suite) overran(began time.Time, ttl time.Duration) bool {
	return s.advance == nil && time.Since(began) >= ttl && ttl < s.d(32*time.Second)
}

func (s *suite) releaseChecksOwner(t *testing.T, ks keyserver.KeyServer, key string) {
	ctx := context.Background()
	expect(t, "Release(a) of an absent key", false)(ks.Release(ctx, key, "a"))
	expect(t, "Acquire(a)", true)(ks.Acquire(ctx, key, "a", ttl))
	expect(t, "Release(b) of a key held by a", false)(ks.Release(ctx, key, "b"))
	expect(t, "Acquire(b) after its refused Release", false)(ks.Acquire(ctx, key, "b", ttl))
	expect(t, "Release(a) by its holder", true)(ks.Release(ctx, key, "a"))
	expect(t, "Release(a) a second time", false)(ks.Release(ctx, key, "a"))
	expect(t, "Acquire(b) after a's release", true)(ks.Acquire(ctx, key, "b", ttl))
	expect(t, "Release(b)", true)(ks.Release(ctx, key, "b"))
}

func (s *suite) keyExpires(t *testing.T, ks keyserver.KeyServer, key string) {
	ctx := context.Background()
	short := s.d(300 * time.Millisecond)
	expect(t, "Acquire(a)", true)(ks.Acquire(ctx, key, "a", short))
	expect(t, "Acquire(b) before a's TTL ran out", false)(ks.Acquire(ctx, key, "b", ttl))
	if s.advance != nil {
		s.advance(short)
		expect(t, "Acquire(b) once a's TTL ran out", true)(ks.Acquire(ctx, key, "b", ttl))
	} else {
		// Real time: poll until the key is free rather than trusting one
		// sleep, and fail only when it is still held far past its TTL.
		deadline := time.Now().Add(s.d(5 * time.Second))
		for {
			ok, err := ks.Acquire(ctx, key, "b", ttl)
			if err != nil {
				t.Fatalf("Acquire(b) while waiting for expiry: %v", err)
			}
			if ok {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("key with a TTL of %v still held after %v", short, s.d(5*time.Second))
			}
			time.Sleep(short / 10)
		}
	}
	expect(t, "Extend(a) of a key b took after expiry", false)(ks.Extend(ctx, key, "a", ttl))
	expect(t, "Release(a) of a key b took after expiry", false)(ks.Release(ctx, key, "a"))
	expect(t, "Release(b)", true)(ks.Release(ctx, key, "b"))
}

func (s *suite) keysAreIndependent(t *testing.T, ks keyserver.KeyServer, key string) {
	ctx := context.Background()
	expect(t, "Acquire(a) on key 1", true)(ks.Acquire(ctx, key+"/1", "a", ttl))
	expect(t, "Acquire(b) on key 2", true)(ks.Acquire(ctx, key+"/2", "b", ttl))
	expect(t, "Release(a) on key 2", false)(ks.Release(ctx, key+"/2", "a"))
	expect(t, "Release(a) on key 1", true)(ks.Release(ctx, key+"/1", "a"))
	expect(t, "Release(b) on key 2", true)(ks.Release(ctx, key+"/2", "b"))
}

func (s *suite) concurrentTakersOneWins(t *testing.T, ks keyserver.KeyServer, key string) {
	const takers = 16
	var (
		wg     sync.WaitGroup
		mu     sync.Mutex
		wins   []string
		errs   []error
		starts = make(chan struct{})
	)
	for i := 0; i < takers; i++ {
		wg.Add(1)
		go func(token string) {
			defer wg.Done()
			<-starts
			ok, err := ks.Acquire(context.Background(), key, token, ttl)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, err)
			} else if ok {
				wins = append(wins, token)
			}
		}(fmt.Sprintf("t%d", i))
	}
	close(starts)
	wg.Wait()
	if len(errs) > 0 {
		t.Fatalf("concurrent Acquire failed: %v", errors.Join(errs...))
	}
	if len(wins) != 1 {
		t.Fatalf("%d concurrent takers: %d won (%v), want exactly 1", takers, len(wins), wins)
	}
	expect(t, "Release by the winner", true)(ks.Release(context.Background(), key, wins[0]))
}

func (s *suite) invalidArguments(t *testing.T, ks keyserver.KeyServer, key string) {
	ctx := context.Background()
	calls := []struct {
		name string
		call func() (bool, error)
	}{
		{"Acquire with an empty key", func() (bool, error) { return ks.Acquire(ctx, "", "a", ttl) }},
		{"Acquire with an empty token", func() (bool, error) { return ks.Acquire(ctx, key, "", ttl) }},
		{"Acquire with a zero TTL", func() (bool, error) { return ks.Acquire(ctx, key, "a", 0) }},
		{"Acquire with a sub-millisecond TTL", func() (bool, error) { return ks.Acquire(ctx, key, "a", time.Millisecond-1) }},
		{"Acquire with a negative TTL", func() (bool, error) { return ks.Acquire(ctx, key, "a", -time.Second) }},
		{"Extend with an empty key", func() (bool, error) { return ks.Extend(ctx, "", "a", ttl) }},
		{"Extend with a zero TTL", func() (bool, error) { return ks.Extend(ctx, key, "a", 0) }},
		{"Release with an empty key", func() (bool, error) { return ks.Release(ctx, "", "a") }},
		{"Release with an empty token", func() (bool, error) { return ks.Release(ctx, key, "") }},
	}
	for _, c := range calls {
		ok, err := c.call()
		if ok || !errors.Is(err, keyserver.ErrInvalidArgument) {
			t.Errorf("%s = %v, %v; want false and an error wrapping keyserver.ErrInvalidArgument", c.name, ok, err)
		}
	}
	expect(t, "Acquire(a) after the invalid calls", true)(ks.Acquire(ctx, key, "a", ttl))
	expect(t, "Release(a)", true)(ks.Release(ctx, key, "a"))
}

func (s *suite) cancelledContext(t *testing.T, ks keyserver.KeyServer, key string) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if ok, err := ks.Acquire(ctx, key, "a", ttl); ok || err == nil {
		t.Errorf("Acquire with a cancelled context = %v, %v; want false and an error", ok, err)
	}
	bg := context.Background()
	// Whether or not the cancelled call reached the store, b must not be
	// granted a key that a holds, and a must be able to clean up.
	if ok, _ := ks.Acquire(bg, key, "b", ttl); ok {
		expect(t, "Release(b)", true)(ks.Release(bg, key, "b"))
	}
	ks.Release(bg, key, "a") //nolint:errcheck // cleanup only
}

// fenceCounters checks a Fencer's counters (a server that is not one
// passes): read in the same step as the vote, raised only upwards, kept
// after the lock key is gone, and separate per key.
func (s *suite) fenceCounters(t *testing.T, ks keyserver.KeyServer, key string) {
	fs, ok := ks.(keyserver.Fencer)
	if !ok {
		return
	}
	ctx := context.Background()
	fenced := func(what, token string, wantOK bool, wantFence uint64) {
		t.Helper()
		ok, fence, err := fs.AcquireFenced(ctx, key, token, ttl)
		if err != nil || ok != wantOK || fence != wantFence {
			t.Fatalf("%s = %v, %d, %v; want %v, %d, nil", what, ok, fence, err, wantOK, wantFence)
		}
	}
	raise := func(what string, fence, wantPrev uint64) {
		t.Helper()
		prev, err := fs.RaiseFence(ctx, key, fence)
		if err != nil || prev != wantPrev {
			t.Fatalf("%s = %d, %v; want %d, nil", what, prev, err, wantPrev)
		}
	}
	fenced("AcquireFenced(a) with no counter yet", "a", true, 0)
	raise("RaiseFence(7) from 0", 7, 0)
	raise("RaiseFence(3) below 7", 3, 7)
	raise("RaiseFence(7) again", 7, 7)
	fenced("AcquireFenced(b) while a holds the key", "b", false, 7)
	expect(t, "Release(a)", true)(ks.Release(ctx, key, "a"))
	fenced("AcquireFenced(b) after the release: the counter outlives the key", "b", true, 7)
	raise("RaiseFence(large)", keyserver.MaxFence, 7)
	fenced("AcquireFenced(b) again by its holder", "b", true, keyserver.MaxFence)
	expect(t, "Release(b)", true)(ks.Release(ctx, key, "b"))
	other := key + ":other"
	if _, fence, err := fs.AcquireFenced(ctx, other, "c", ttl); err != nil || fence != 0 {
		t.Fatalf("AcquireFenced on another key = %d, %v; want 0: counters are per key", fence, err)
	}
	expect(t, "Release(c)", true)(ks.Release(ctx, other, "c"))
	if _, err := fs.RaiseFence(ctx, "", 1); !errors.Is(err, keyserver.ErrInvalidArgument) {
		t.Errorf("RaiseFence with an empty key = %v, want ErrInvalidArgument", err)
	}
}

// acquireOrHolder checks a Notifier's AcquireOrHolder (a server that is not
// one passes): Acquire's votes, and with a refusal the holder's remaining
// TTL, measured on the server's clock, and its rank.
func (s *suite) acquireOrHolder(t *testing.T, ks keyserver.KeyServer, key string) {
	ns, ok := ks.(keyserver.Notifier)
	if !ok {
		return
	}
	ctx := context.Background()
	acquire := func(what, token string, want bool) keyserver.Holder {
		t.Helper()
		ok, h, err := ns.AcquireOrHolder(ctx, key, token, ttl)
		if err != nil || ok != want {
			t.Fatalf("%s = %v, %+v, %v; want %v, nil", what, ok, h, err, want)
		}
		return h
	}
	acquire("AcquireOrHolder(a) on an absent key", "a", true)
	acquire("AcquireOrHolder(a) again by its holder", "a", true)
	waited := s.d(300 * time.Millisecond)
	s.wait(waited)
	h := acquire("AcquireOrHolder(b) on a key held by a", "b", false)
	// The server counts whole milliseconds; on real time the holder's TTL
	// started before the wait did, and the refusal came after it.
	slack := time.Millisecond
	if s.advance == nil {
		slack = s.d(2 * time.Second)
	}
	if h.Left > ttl-waited+time.Millisecond || h.Left < ttl-waited-slack {
		t.Errorf("AcquireOrHolder(b) reported %v left of a's TTL of %v, %v after it was set; want about %v", h.Left, ttl, waited, ttl-waited)
	}
	if h.Rank != 0 {
		t.Errorf("AcquireOrHolder(b) ranked %d against token \"a\", which carries no rank; want 0", h.Rank)
	}
	expect(t, "Acquire(b) after AcquireOrHolder refused it", false)(ks.Acquire(ctx, key, "b", ttl))
	expect(t, "Release(a)", true)(ks.Release(ctx, key, "a"))
	acquire("AcquireOrHolder(b) after a's release", "b", true)
	expect(t, "Release(b)", true)(ks.Release(ctx, key, "b"))

	// Ranked tokens are compared by the rank they carry, by RankOf's rule.
	const (
		early = "0000019a2b3c4d5e.0123456789abcdef0123456789abcdef"
		late  = "0000019a2b3c4d5f.0000000089abcdef0123456789abcdef"
		twin  = "0000019a2b3c4d5e.0123456799999999999999999999999f" // early's rank
	)
	acquire("AcquireOrHolder(late) on an absent key", late, true)
	for _, c := range []struct {
		caller string
		want   int
	}{{early, 1}, {"b", 0}, {late[:48], 0}} {
		if h := acquire("AcquireOrHolder("+c.caller+") on a key held by late", c.caller, false); h.Rank != c.want {
			t.Errorf("AcquireOrHolder(%s) against late = %d, want %d", c.caller, h.Rank, c.want)
		}
	}
	expect(t, "Release(late)", true)(ks.Release(ctx, key, late))
	acquire("AcquireOrHolder(early) on an absent key", early, true)
	for _, c := range []struct {
		caller string
		want   int
	}{{late, -1}, {twin, 0}} {
		if h := acquire("AcquireOrHolder("+c.caller+") on a key held by early", c.caller, false); h.Rank != c.want {
			t.Errorf("AcquireOrHolder(%s) against early = %d, want %d", c.caller, h.Rank, c.want)
		}
	}
	expect(t, "Release(early)", true)(ks.Release(ctx, key, early))
}

// wakeWithin bounds how long a Notifier may take to wake a waiter.
const wakeWithin = 5 * time.Second

// ranked returns a token that carries a rank, as the redlock client's do
// (testkit.Ranked).
var ranked = testkit.Ranked

// awaitClosed fails t unless c is closed within wakeWithin.
func awaitClosed(t *testing.T, what string, c <-chan struct{}) {
	t.Helper()
	select {
	case <-c:
	case <-time.After(wakeWithin):
		t.Fatalf("%s: no wake within %v", what, wakeWithin)
	}
}

// isClosed reports whether c is closed, without waiting.
func isClosed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// line is a Notifier under test with the helpers of the line checks.
type line struct {
	t   *testing.T
	ns  keyserver.Notifier
	key string
}

func (l line) inLine(what, token string, want bool) keyserver.Holder {
	l.t.Helper()
	return l.inLineWith(what, token, "", want)
}

// inLineWith is inLine with AcquireInLine's next.
func (l line) inLineWith(what, token, next string, want bool) keyserver.Holder {
	l.t.Helper()
	ok, h, err := l.ns.AcquireInLine(context.Background(), l.key, token, ttl, next)
	if err != nil || ok != want {
		l.t.Fatalf("%s = %v, %+v, %v; want %v, nil", what, ok, h, err, want)
	}
	return h
}

// free checks that the key is free, as a token without a rank finds it,
// and leaves it free.
func (l line) free(what string) {
	l.t.Helper()
	ctx := context.Background()
	expect(l.t, "Acquire(x) "+what, true)(l.ns.Acquire(ctx, l.key, "x", ttl))
	expect(l.t, "Release(x)", true)(l.ns.Release(ctx, l.key, "x"))
}

// promise has holder take the key and waiter join its line, and holder
// release it: the key is then promised to waiter's call.
func (l line) promise(holder, waiter string) {
	l.t.Helper()
	ctx := context.Background()
	expect(l.t, "Acquire(holder)", true)(l.ns.Acquire(ctx, l.key, holder, ttl))
	l.inLine("AcquireInLine(waiter)", waiter, false)
	expect(l.t, "Release(holder)", true)(l.ns.Release(ctx, l.key, holder))
}

// watch starts a WatchTurn for token, stopped when the test ends.
func (l line) watch(token string) <-chan struct{} {
	l.t.Helper()
	turn, stop, err := l.ns.WatchTurn(context.Background(), l.key, token)
	if err != nil {
		l.t.Fatalf("WatchTurn(%s): %v", token, err)
	}
	l.t.Cleanup(stop)
	return turn
}

// quiet checks that none of the channels is closed a little while after
// what happened: a stray wake would come about as soon as a due one does.
func quiet(t *testing.T, what string, cs ...<-chan struct{}) {
	t.Helper()
	time.Sleep(20 * time.Millisecond)
	for i, c := range cs {
		if isClosed(c) {
			t.Fatalf("%s: watch %d woke, and should not have", what, i)
		}
	}
}

func notifier(ks keyserver.KeyServer) (keyserver.Notifier, bool) {
	ns, ok := ks.(keyserver.Notifier)
	return ns, ok
}

// lineServesInRankOrder checks a Notifier's line: waiters are served in
// the order of their ranks, whatever the order they came in, and a refusal
// says how many are ahead; a release promises the key to the next waiter
// only and wakes that one; a promised key refuses everyone else and is
// claimed by any token of the waiter's call.
func (s *suite) lineServesInRankOrder(t *testing.T, ks keyserver.KeyServer, key string) {
	ns, ok := notifier(ks)
	if !ok {
		return
	}
	ctx := context.Background()
	l := line{t, ns, key}
	holder, early, late := ranked(1, 1), ranked(2, 1), ranked(3, 1)
	expect(t, "Acquire(holder)", true)(ks.Acquire(ctx, key, holder, ttl))
	if h := l.inLine("AcquireInLine(late) on a held key", late, false); h.Rank != -1 || h.Left <= 0 || h.Ahead != 0 {
		t.Errorf("AcquireInLine(late) reported %+v; want the holder first, its TTL left, nobody ahead", h)
	}
	if h := l.inLine("AcquireInLine(early), which came second", early, false); h.Ahead != 0 {
		t.Errorf("AcquireInLine(early) reported %d ahead, want 0: it ranks first", h.Ahead)
	}
	if h := l.inLine("AcquireInLine(late) again, keeping its place", ranked(3, 2), false); h.Ahead != 1 {
		t.Errorf("AcquireInLine(late) again reported %d ahead, want 1: early", h.Ahead)
	}
	earlyTurn := l.watch(early)
	lateTurn := l.watch(late)
	quiet(t, "WatchTurn on a held key", earlyTurn, lateTurn)

	expect(t, "Release(holder) with two waiters", true)(ks.Release(ctx, key, holder))
	awaitClosed(t, "early's turn, after the release", earlyTurn)
	quiet(t, "late's turn: a release wakes the next waiter only", lateTurn)
	if h := l.inLine("AcquireInLine(late), now first in line", late, false); h.Ahead != 0 {
		t.Errorf("AcquireInLine(late) after early's turn reported %d ahead, want 0", h.Ahead)
	}
	expect(t, "Acquire(x) of a key promised to early", false)(ks.Acquire(ctx, key, "x", ttl))
	ok, h, err := ns.AcquireOrHolder(ctx, key, late, ttl)
	if ok || err != nil || h.Rank != -1 || h.Left <= 0 || h.Left > layout.ClaimTTL {
		t.Errorf("AcquireOrHolder(late) of a key promised to early = %v, %+v, %v; want false, early first, at most %v left",
			ok, h, err, layout.ClaimTTL)
	}
	claim := ranked(2, 2) // another attempt of early's call
	l.inLine("AcquireInLine by early's call, claiming its promise", claim, true)
	l.inLine("AcquireInLine by early's call again, renewing", claim, true)
	expect(t, "Release(early's claim)", true)(ks.Release(ctx, key, claim))
	awaitClosed(t, "late's turn, after early's release", lateTurn)
	l.inLine("AcquireInLine by late's call, claiming", ranked(3, 3), true)
	expect(t, "Release(late's claim), nobody waiting", true)(ks.Release(ctx, key, ranked(3, 3)))
	l.free("after the line emptied")
}

// turnIsNotMissed checks that a WatchTurn started after the turn came (the
// release landed between the waiter's refusal and its watch) fires at
// once; and so does one started while an earlier watch of the same
// waiter, set before its place was last taken and still on, heard the
// turn: a waiter that sets its watches anew before it claims must not
// lose the turn to the watch it replaces.
func (s *suite) turnIsNotMissed(t *testing.T, ks keyserver.KeyServer, key string) {
	ns, ok := notifier(ks)
	if !ok {
		return
	}
	ctx := context.Background()
	l := line{t, ns, key}
	holder, waiter, next := ranked(1, 1), ranked(2, 1), ranked(3, 1)
	expect(t, "Acquire(holder)", true)(ks.Acquire(ctx, key, holder, ttl))
	l.inLine("AcquireInLine(waiter)", waiter, false)
	expect(t, "Release(holder), before the waiter watches", true)(ks.Release(ctx, key, holder))
	awaitClosed(t, "a turn that came before WatchTurn", l.watch(waiter))
	l.inLine("AcquireInLine(waiter), claiming", waiter, true)

	first := l.watch(next)
	l.inLine("AcquireInLine(next), its first watch on", next, false)
	expect(t, "Release(waiter)", true)(ks.Release(ctx, key, waiter))
	awaitClosed(t, "next's first watch, at the turn", first)
	awaitClosed(t, "a second watch of next, set while the key is promised to it", l.watch(next))
	l.inLine("AcquireInLine(next), claiming", ranked(3, 2), true)
	expect(t, "Release(next)", true)(ks.Release(ctx, key, ranked(3, 2)))
}

// leaveLinePassesThePromise checks LeaveLine: a waiter that leaves is
// skipped, and a promise made to it passes to the next waiter.
func (s *suite) leaveLinePassesThePromise(t *testing.T, ks keyserver.KeyServer, key string) {
	ns, ok := notifier(ks)
	if !ok {
		return
	}
	ctx := context.Background()
	l := line{t, ns, key}
	holder, first, second, third := ranked(1, 1), ranked(2, 1), ranked(3, 1), ranked(4, 1)
	expect(t, "Acquire(holder)", true)(ks.Acquire(ctx, key, holder, ttl))
	for _, w := range []string{first, second, third} {
		l.inLine("AcquireInLine(waiter)", w, false)
	}
	if err := ns.LeaveLine(ctx, key, ranked(2, 9)); err != nil { // first's call, another token
		t.Fatalf("LeaveLine(first): %v", err)
	}
	if err := ns.LeaveLine(ctx, key, ranked(9, 1)); err != nil {
		t.Fatalf("LeaveLine of a call that is not in line: %v", err)
	}
	secondTurn := l.watch(second)
	thirdTurn := l.watch(third)
	expect(t, "Release(holder)", true)(ks.Release(ctx, key, holder))
	awaitClosed(t, "second's turn, the first having left", secondTurn)
	if err := ns.LeaveLine(ctx, key, second); err != nil {
		t.Fatalf("LeaveLine(second) while the key is promised to it: %v", err)
	}
	awaitClosed(t, "third's turn, second having left with the promise", thirdTurn)
	l.inLine("AcquireInLine(third), claiming", third, true)
	expect(t, "Release(third)", true)(ks.Release(ctx, key, third))
	l.free("after the line emptied")
}

// promiseLapses checks that a key promised to a waiter that never claims
// it is free again after a claim's 500 ms.
func (s *suite) promiseLapses(t *testing.T, ks keyserver.KeyServer, key string) {
	ns, ok := notifier(ks)
	if !ok {
		return
	}
	ctx := context.Background()
	l := line{t, ns, key}
	l.promise(ranked(1, 1), ranked(2, 1))
	expect(t, "Acquire(x) of a key promised to gone", false)(ks.Acquire(ctx, key, "x", ttl))
	s.wait(layout.ClaimTTL + s.d(100*time.Millisecond))
	l.free("after the promise lapsed")
}

// promiseIsTheCallers checks that a key promised to a call is that call's
// to claim by Acquire, AcquireInLine or Extend with any token of its rank,
// and that Release, which deletes only tokens, leaves a promise alone: the
// clean-up of a failed attempt must not give away a promise made to it.
func (s *suite) promiseIsTheCallers(t *testing.T, ks keyserver.KeyServer, key string) {
	ns, ok := notifier(ks)
	if !ok {
		return
	}
	ctx := context.Background()
	l := line{t, ns, key}
	holder, waiter := ranked(1, 1), ranked(2, 1)
	l.promise(holder, waiter)
	expect(t, "Release by the waiter's call of its promise", false)(ks.Release(ctx, key, ranked(2, 2)))
	expect(t, "Acquire(x) of the key still promised", false)(ks.Acquire(ctx, key, "x", ttl))
	expect(t, "Extend by the waiter's call of its promise", true)(ks.Extend(ctx, key, ranked(2, 2), ttl))
	expect(t, "Release by the waiter's call", true)(ks.Release(ctx, key, ranked(2, 2)))
	l.promise(holder, waiter)
	expect(t, "Acquire by the waiter's call of its promise", true)(ks.Acquire(ctx, key, ranked(2, 4), ttl))
	expect(t, "Release by the waiter's call", true)(ks.Release(ctx, key, ranked(2, 4)))
	l.promise(holder, waiter)
	if err := ns.LeaveLine(ctx, key, ranked(2, 5)); err != nil {
		t.Fatalf("LeaveLine by the waiter's call of its promise: %v", err)
	}
	l.free("after the promise was passed on to nobody")
}

// releaseInLineKeepsThePlace checks ReleaseInLine: a waiter that gives
// back a claimed promise while others wait is promised the key again when
// it ranks first, not the waiter behind it; one ranked after a waiter
// gives the key to that waiter; with nobody waiting the key is freed and
// the caller is in no line; a token that does not hold the key changes
// nothing.
func (s *suite) releaseInLineKeepsThePlace(t *testing.T, ks keyserver.KeyServer, key string) {
	ns, ok := notifier(ks)
	if !ok {
		return
	}
	ctx := context.Background()
	l := line{t, ns, key}
	holder, first, second := ranked(1, 1), ranked(2, 1), ranked(3, 1)
	expect(t, "Acquire(holder)", true)(ks.Acquire(ctx, key, holder, ttl))
	l.inLine("AcquireInLine(first)", first, false)
	l.inLine("AcquireInLine(second)", second, false)
	secondTurn := l.watch(second)
	expect(t, "Release(holder)", true)(ks.Release(ctx, key, holder))
	l.inLine("AcquireInLine by first's call, claiming its promise", ranked(2, 2), true)
	expect(t, "ReleaseInLine of another token", false)(ns.ReleaseInLine(ctx, key, ranked(2, 9)))
	expect(t, "ReleaseInLine by first's call", true)(ns.ReleaseInLine(ctx, key, ranked(2, 2)))
	awaitClosed(t, "first's turn, given back to itself", l.watch(first))
	quiet(t, "second's turn, while first keeps its place", secondTurn)
	if h := l.inLine("AcquireInLine(second), behind first", second, false); h.Ahead != 0 || h.Rank != -1 {
		t.Errorf("AcquireInLine(second) reported %+v; want the key promised to first, nobody ahead", h)
	}
	l.inLine("AcquireInLine by first's call, claiming again", ranked(2, 3), true)
	expect(t, "Release(first's claim)", true)(ks.Release(ctx, key, ranked(2, 3)))
	awaitClosed(t, "second's turn, after first's release", secondTurn)

	// A later waiter that gives back a key it was granted passes it to
	// the earlier one in line.
	l.inLine("AcquireInLine by second's call, claiming", ranked(3, 2), true)
	l.inLine("AcquireInLine(first) again", ranked(2, 4), false)
	firstTurn := l.watch(first)
	expect(t, "ReleaseInLine by second's call", true)(ns.ReleaseInLine(ctx, key, ranked(3, 2)))
	awaitClosed(t, "first's turn, second having given back", firstTurn)
	if err := ns.LeaveLine(ctx, key, first); err != nil {
		t.Fatalf("LeaveLine(first) while the key is promised to it: %v", err)
	}
	if err := ns.LeaveLine(ctx, key, second); err != nil {
		t.Fatalf("LeaveLine(second) while the key is promised to it: %v", err)
	}
	l.free("after both left")

	// With nobody else in line the key is freed, and the caller joins no
	// line: the next release does not promise the key to it.
	l.inLine("AcquireInLine(alone) of a free key", ranked(5, 1), true)
	expect(t, "ReleaseInLine(alone)", true)(ns.ReleaseInLine(ctx, key, ranked(5, 1)))
	l.free("after a give-back with nobody in line")
	l.free("after a release that promised it to nobody")
}

// onlyAcquireInLineJoins checks that AcquireOrHolder and tokens without a
// rank never join the line: their refusals leave nobody to promise the key
// to.
func (s *suite) onlyAcquireInLineJoins(t *testing.T, ks keyserver.KeyServer, key string) {
	ns, ok := notifier(ks)
	if !ok {
		return
	}
	ctx := context.Background()
	l := line{t, ns, key}
	holder := ranked(1, 1)
	expect(t, "Acquire(holder)", true)(ks.Acquire(ctx, key, holder, ttl))
	if ok, _, err := ns.AcquireOrHolder(ctx, key, ranked(2, 1), ttl); ok || err != nil {
		t.Fatalf("AcquireOrHolder of a held key = %v, %v; want false, nil", ok, err)
	}
	l.inLine("AcquireInLine with a token without rank", "u", false)
	expect(t, "Release(holder)", true)(ks.Release(ctx, key, holder))
	l.free("after the release: nobody was in line")
}

// nextJoinsTheLine checks AcquireInLine's next: the call it names takes
// its place in line whether the caller is refused or granted, and is
// served in rank order like any waiter.
func (s *suite) nextJoinsTheLine(t *testing.T, ks keyserver.KeyServer, key string) {
	ns, ok := notifier(ks)
	if !ok {
		return
	}
	ctx := context.Background()
	l := line{t, ns, key}
	holder, a, b, c := ranked(1, 1), ranked(2, 1), ranked(3, 1), ranked(4, 1)
	expect(t, "Acquire(holder)", true)(ks.Acquire(ctx, key, holder, ttl))
	l.inLineWith("AcquireInLine(a) with next b, refused", a, b, false)
	bTurn := l.watch(b)
	expect(t, "Release(holder)", true)(ks.Release(ctx, key, holder))
	l.inLineWith("AcquireInLine(a) with next c, claiming", ranked(2, 2), c, true)
	cTurn := l.watch(c)
	quiet(t, "b's and c's turns while a holds", bTurn, cTurn)
	expect(t, "Release(a)", true)(ks.Release(ctx, key, ranked(2, 2)))
	awaitClosed(t, "b's turn: b joined the line with a's refused attempt", bTurn)
	l.inLine("AcquireInLine(b), claiming", b, true)
	expect(t, "Release(b)", true)(ks.Release(ctx, key, b))
	awaitClosed(t, "c's turn: c joined the line with a's granted attempt", cTurn)
	l.inLine("AcquireInLine(c), claiming", c, true)
	expect(t, "Release(c)", true)(ks.Release(ctx, key, c))
	l.free("after the line emptied")
}

// lineArguments checks that a Notifier refuses what the other calls
// refuse: an empty key or token, an ended context, bad AcquireOrHolder and
// AcquireInLine arguments.
func (s *suite) lineArguments(t *testing.T, ks keyserver.KeyServer, key string) {
	ns, ok := notifier(ks)
	if !ok {
		return
	}
	ctx := context.Background()
	token := ranked(1, 1)
	for _, c := range []struct{ what, key, token string }{{"an empty key", "", token}, {"an empty token", key, ""}} {
		if _, _, err := ns.WatchTurn(ctx, c.key, c.token); !errors.Is(err, keyserver.ErrInvalidArgument) {
			t.Errorf("WatchTurn with %s = %v, want ErrInvalidArgument", c.what, err)
		}
		if err := ns.LeaveLine(ctx, c.key, c.token); !errors.Is(err, keyserver.ErrInvalidArgument) {
			t.Errorf("LeaveLine with %s = %v, want ErrInvalidArgument", c.what, err)
		}
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if c, stop, err := ns.WatchTurn(cancelled, key, token); err == nil {
		stop()
		t.Errorf("WatchTurn with a cancelled context = %v, nil; want an error", c)
	}
	for _, c := range []struct {
		what       string
		key, token string
		ttl        time.Duration
	}{
		{"an empty key", "", "a", ttl},
		{"an empty token", key, "", ttl},
		{"a sub-millisecond TTL", key, "a", time.Millisecond - 1},
	} {
		if ok, _, err := ns.AcquireOrHolder(ctx, c.key, c.token, c.ttl); ok || !errors.Is(err, keyserver.ErrInvalidArgument) {
			t.Errorf("AcquireOrHolder with %s = %v, %v; want false and ErrInvalidArgument", c.what, ok, err)
		}
		if ok, _, err := ns.AcquireInLine(ctx, c.key, c.token, c.ttl, ""); ok || !errors.Is(err, keyserver.ErrInvalidArgument) {
			t.Errorf("AcquireInLine with %s = %v, %v; want false and ErrInvalidArgument", c.what, ok, err)
		}
	}
}

// d scales a duration by the suite's time scale.
func (s *suite) d(x time.Duration) time.Duration { return time.Duration(float64(x) * s.scale) }

// wait lets d pass on the server's clock.
func (s *suite) wait(d time.Duration) {
	if s.advance != nil {
		s.advance(d)
		return
	}
	time.Sleep(d)
}

// expect returns a checker for the (ok, err) result of one call.
var expect = testkit.Expect

// randomKey names a key no other test uses, on a server tests may share.
func randomKey(t *testing.T) string { return testkit.RandomKey(t, "keyservertest") }

// contentionIsTold checks WatchContention: a waiter that joins the
// holder's line is told, a caller that does not wait (AcquireOrHolder) is
// not, and a watch set up while a waiter is in line is told at once;
// unless the server cannot tell (errors.ErrUnsupported).
func (s *suite) contentionIsTold(t *testing.T, ks keyserver.KeyServer, key string) {
	ns, ok := ks.(keyserver.Notifier)
	if !ok {
		return
	}
	ctx := context.Background()
	holder, waiter := ranked(1, 1), ranked(2, 1)
	watch := func(what string) <-chan struct{} {
		t.Helper()
		contended, _, stop, err := ns.WatchContention(ctx, key, holder)
		if err != nil {
			t.Fatalf("WatchContention %s: %v", what, err)
		}
		t.Cleanup(stop)
		return contended
	}
	l := line{t: t, ns: ns, key: key}
	expect(t, "Acquire(holder)", true)(ns.Acquire(ctx, key, holder, ttl))
	contended, _, stop, err := ns.WatchContention(ctx, key, holder)
	if errors.Is(err, errors.ErrUnsupported) {
		expect(t, "Release(holder)", true)(ns.Release(ctx, key, holder))
		return
	}
	if err != nil {
		t.Fatalf("WatchContention of a line nobody waits in: %v", err)
	}
	t.Cleanup(stop)
	if ok, _, err := ns.AcquireOrHolder(ctx, key, ranked(3, 1), ttl); ok || err != nil {
		t.Fatalf("AcquireOrHolder of a held key = %v, %v; want false, nil", ok, err)
	}
	quiet(t, "a refused AcquireOrHolder, which does not wait", contended)
	l.inLine("AcquireInLine(waiter)", waiter, false)
	awaitClosed(t, "WatchContention when a waiter joined the line", contended)
	awaitClosed(t, "WatchContention of a line a waiter is in", watch("of a line a waiter is in"))
	if err := ns.LeaveLine(ctx, key, waiter); err != nil {
		t.Fatalf("LeaveLine(waiter): %v", err)
	}
	expect(t, "Release(holder)", true)(ns.Release(ctx, key, holder))
	if _, _, _, err := ns.WatchContention(ctx, key, ""); !errors.Is(err, keyserver.ErrInvalidArgument) {
		t.Errorf("WatchContention with an empty token = %v; want ErrInvalidArgument", err)
	}
}
