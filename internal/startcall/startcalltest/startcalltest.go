// Package startcalltest checks a key server's started calls (package
// startcall) against its blocking methods: each answers as the blocking
// method does, once, and not at all when told not to go on. The started
// calls are this module's own protocol, so their checks live here and not
// in the public conformance suite (keyservertest), which a third-party
// server runs: the Redis transports' suite (transporttest) runs both.
package startcalltest

import (
	"context"
	"testing"
	"time"

	"github.com/goredlock/goredlock/internal/startcall"
	"github.com/goredlock/goredlock/internal/testkit"
	"github.com/goredlock/goredlock/keyserver"
)

// Run runs the checks as subtests of t, each on a server newServer makes
// and a key of its own. A server that starts no calls (startcall.Of finds
// no Starter) passes them, as one that declines every call does.
func Run(t *testing.T, newServer func(t *testing.T) keyserver.KeyServer) {
	for _, tc := range []struct {
		name string
		fn   func(*testing.T, keyserver.KeyServer, startcall.Starter, string)
	}{
		{"StartedCallsAnswerAsBlocking", startedCallsAnswerAsBlocking},
		{"StartedCallStopsWhenNotContinued", startedCallStopsWhenNotContinued},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ks := newServer(t)
			st := startcall.Of(ks)
			if st == nil {
				t.Logf("%T starts no calls", ks)
				return
			}
			tc.fn(t, ks, st, randomKey(t))
		})
	}
}

const (
	ttl = 10 * time.Second
	// wakeWithin bounds how long a started call may take to be answered.
	wakeWithin = 5 * time.Second
)

// completion is a startcall.Completion that passes its answers on; room
// for two lets a second answer, which the contract forbids, be seen.
type completion struct {
	goOn    bool
	asked   chan struct{} // a value per call of Continue
	answers chan startcall.Answer
}

func newCompletion(goOn bool) *completion {
	return &completion{goOn: goOn, asked: make(chan struct{}, 8), answers: make(chan startcall.Answer, 2)}
}

func (c *completion) Continue() bool {
	select {
	case c.asked <- struct{}{}:
	default: // asked often: once is what the checks look for
	}
	return c.goOn
}

func (c *completion) Complete(a startcall.Answer) {
	select {
	case c.answers <- a:
	default: // a third answer: the second fails the check already
	}
}

// starter runs started calls against one server and checks at the end of
// the test that none was answered twice.
type starter struct {
	t     *testing.T
	st    startcall.Starter
	key   string
	calls []*completion
}

func newStarter(t *testing.T, st startcall.Starter, key string) *starter {
	s := &starter{t: t, st: st, key: key}
	t.Cleanup(func() {
		for _, c := range s.calls {
			if len(c.answers) > 0 {
				t.Errorf("a started call was answered twice: %+v", <-c.answers)
			}
		}
	})
	return s
}

// start starts c on the key with a completion that goes on, and returns
// its answer, or false when the server declined the call (which it may,
// for any call).
func (s *starter) start(what string, c startcall.Call) (startcall.Answer, bool) {
	s.t.Helper()
	c.Key, c.Deadline = s.key, time.Now().Add(wakeWithin)
	to := newCompletion(true)
	if !s.st.Start(context.Background(), c, to) {
		s.t.Logf("%s: declined; made with the blocking method", what)
		return startcall.Answer{}, false
	}
	s.calls = append(s.calls, to)
	select {
	case a := <-to.answers:
		if a.Err != nil {
			s.t.Fatalf("%s: unexpected error: %v", what, a.Err)
		}
		return a, true
	case <-time.After(wakeWithin):
		s.t.Fatalf("%s: not answered within %v", what, wakeWithin)
		return startcall.Answer{}, false
	}
}

// expect starts c and checks its vote, or makes it with blocking when
// the server declines it, so that the key's state is the same either way;
// started reports which.
func (s *starter) expect(what string, c startcall.Call, want bool, blocking func() (bool, error)) (a startcall.Answer, started bool) {
	s.t.Helper()
	a, started = s.start(what, c)
	if !started {
		expect(s.t, what, want)(blocking())
		return a, false
	}
	if a.OK != want {
		s.t.Fatalf("%s = %v, want %v", what, a.OK, want)
	}
	return a, true
}

// holderFirst checks the holder a refused started call reported: the
// holder's rank first, and some of its TTL left.
func (s *starter) holderFirst(what string, h keyserver.Holder) {
	s.t.Helper()
	if h.Rank != -1 || h.Left <= 0 || h.Left > ttl {
		s.t.Errorf("%s reported holder %+v; want the holder's rank first and 0 < left ≤ %v", what, h, ttl)
	}
}

// startedCallsAnswerAsBlocking checks that each kind of started call
// gives the answer its blocking method gives, on a free key and on one
// another token holds.
func startedCallsAnswerAsBlocking(t *testing.T, ks keyserver.KeyServer, st startcall.Starter, key string) {
	ctx := context.Background()
	a, b := ranked(1, 1), ranked(2, 1)
	// A blocking call first: a server may decline calls until it has a
	// connection.
	expect(t, "Acquire(a)", true)(ks.Acquire(ctx, key, a, ttl))
	expect(t, "Release(a)", true)(ks.Release(ctx, key, a))

	s1 := newStarter(t, st, key)
	s1.expect("started Acquire(a) on an absent key", startcall.Call{Op: startcall.CallAcquire, Token: a, TTL: ttl}, true,
		func() (bool, error) { return ks.Acquire(ctx, key, a, ttl) })
	s1.expect("started Acquire(b) on a key held by a", startcall.Call{Op: startcall.CallAcquire, Token: b, TTL: ttl}, false,
		func() (bool, error) { return ks.Acquire(ctx, key, b, ttl) })
	s1.expect("started Extend(b) of a key held by a", startcall.Call{Op: startcall.CallExtend, Token: b, TTL: ttl}, false,
		func() (bool, error) { return ks.Extend(ctx, key, b, ttl) })
	s1.expect("started Extend(a) by its holder", startcall.Call{Op: startcall.CallExtend, Token: a, TTL: ttl}, true,
		func() (bool, error) { return ks.Extend(ctx, key, a, ttl) })
	if ns, ok := ks.(keyserver.Notifier); ok {
		what := "started AcquireOrHolder(b) on a key held by a"
		if a, started := s1.expect(what, startcall.Call{Op: startcall.CallAcquireOrHolder, Token: b, TTL: ttl}, false,
			func() (bool, error) { ok, _, err := ns.AcquireOrHolder(ctx, key, b, ttl); return ok, err }); started {
			s1.holderFirst(what, a.Holder)
		}
		what = "started AcquireInLine(b) on a key held by a"
		if a, started := s1.expect(what, startcall.Call{Op: startcall.CallAcquireInLine, Token: b, TTL: ttl}, false,
			func() (bool, error) { ok, _, err := ns.AcquireInLine(ctx, key, b, ttl, ""); return ok, err }); started {
			s1.holderFirst(what, a.Holder)
		}
		if err := ns.LeaveLine(ctx, key, b); err != nil {
			t.Fatalf("LeaveLine(b): %v", err)
		}
	}
	s1.expect("started Release(b) of a key held by a", startcall.Call{Op: startcall.CallRelease, Token: b}, false,
		func() (bool, error) { return ks.Release(ctx, key, b) })
	s1.expect("started Release(a) by its holder", startcall.Call{Op: startcall.CallRelease, Token: a}, true,
		func() (bool, error) { return ks.Release(ctx, key, a) })
	expect(t, "Acquire(b) after the started Release(a)", true)(ks.Acquire(ctx, key, b, ttl))
	expect(t, "Release(b)", true)(ks.Release(ctx, key, b))
}

// startedCallStopsWhenNotContinued checks that a started call whose
// Completion says not to go on (Continue false) sends nothing more and is
// not answered: its caller has counted it already. A server that answers
// in one command, never asking, answers as the blocking method does.
func startedCallStopsWhenNotContinued(t *testing.T, ks keyserver.KeyServer, st startcall.Starter, key string) {
	ctx := context.Background()
	a, b := ranked(1, 1), ranked(2, 1)
	expect(t, "Acquire(a)", true)(ks.Acquire(ctx, key, a, ttl))
	to := newCompletion(false)
	if !st.Start(ctx, startcall.Call{Op: startcall.CallAcquire, Key: key, Token: b, TTL: ttl, Deadline: time.Now().Add(wakeWithin)}, to) {
		t.Log("started Acquire(b): declined")
		return
	}
	select {
	case <-to.asked:
	case a := <-to.answers: // answered in one command, never asking
		if a.Err != nil || a.OK {
			t.Fatalf("started Acquire(b) on a key held by a = %+v, want a refusal", a)
		}
		return
	case <-time.After(wakeWithin):
		t.Fatalf("started Acquire(b): neither answered nor asked to go on within %v", wakeWithin)
	}
	// A blocking call on the same key comes after whatever the started
	// call sent, on a server that keeps the order of one key's calls.
	expect(t, "Extend(a) after the started call stopped", true)(ks.Extend(ctx, key, a, ttl))
	select {
	case a := <-to.answers:
		t.Fatalf("started Acquire(b) answered (%+v) after Continue said no", a)
	default:
	}
	expect(t, "Release(b): it never took the key", false)(ks.Release(ctx, key, b))
	expect(t, "Release(a)", true)(ks.Release(ctx, key, a))
}

// The kits' shared helpers (internal/testkit).
var (
	ranked = testkit.Ranked
	expect = testkit.Expect
)

// randomKey names a key no other test uses, on a server tests may share.
func randomKey(t *testing.T) string { return testkit.RandomKey(t, "startcalltest") }
