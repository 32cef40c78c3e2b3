package static_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/goredlock/goredlock/keyserver"
	"github.com/goredlock/goredlock/keyserver/static"
)

func closed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

func TestAcquireOrHolderFollowsAcquiresScript(t *testing.T) {
	boom := errors.New("boom")
	s := static.New(static.WithAcquire(static.Reply{Left: 3 * time.Second, Rank: -1}, static.Reply{OK: true, Rank: 1, Left: time.Hour}, static.Fail(boom), static.FromStore))
	ctx := context.Background()
	for i, want := range []struct {
		ok  bool
		h   keyserver.Holder
		err error
	}{
		{false, keyserver.Holder{Left: 3 * time.Second, Rank: -1}, nil},
		{true, keyserver.Holder{}, nil}, // no holder with a grant
		{false, keyserver.Holder{}, boom},
		{true, keyserver.Holder{}, nil}, // the store: free
	} {
		ok, h, err := s.AcquireOrHolder(ctx, "k", "t", time.Minute)
		if ok != want.ok || h != want.h || !errors.Is(err, want.err) || (want.err == nil && err != nil) {
			t.Errorf("call %d = %v, %+v, %v; want %v, %+v, %v", i, ok, h, err, want.ok, want.h, want.err)
		}
	}
	ok, h, err := s.AcquireOrHolder(ctx, "k", "other", time.Minute)
	if ok || h.Left <= 59*time.Second || h.Left > time.Minute || h.Rank != 0 || err != nil {
		t.Errorf("store refusal = %v, %+v, %v; want false and about a minute", ok, h, err)
	}
	if got := s.Count(static.OpAcquire); got != 5 {
		t.Errorf("Count(acquire) = %d, want 5: AcquireOrHolder is logged as an acquire", got)
	}
}

const tok = "0000019a2b3c4d5e.0123456789abcdef0123456789abcdef"

func TestWatchIsScriptedAndWoken(t *testing.T) {
	refused := errors.New("connection refused")
	s := static.New(static.WithAcquire(static.Grant), static.WithRelease(static.Grant))
	ctx := context.Background()

	s.Script(static.OpWatch, static.Fail(refused), static.FromStore)
	if _, _, err := s.WatchTurn(ctx, "k", tok); !errors.Is(err, refused) {
		t.Fatalf("scripted WatchTurn failure = %v, want %v", err, refused)
	}
	a, stopA, err := s.WatchTurn(ctx, "k", tok)
	if err != nil {
		t.Fatal(err)
	}
	b, stopB, err := s.WatchTurn(ctx, "other", tok)
	if err != nil {
		t.Fatal(err)
	}
	if n := s.Watching("k"); n != 1 {
		t.Fatalf("Watching(k) = %d, want 1", n)
	}

	if n := s.Wake("k"); n != 1 || !closed(a) || closed(b) {
		t.Fatalf("Wake(k) woke %d; k woken %v, other woken %v", n, closed(a), closed(b))
	}
	if n := s.Wake("k"); n != 0 {
		t.Fatalf("a second Wake(k) woke %d", n)
	}
	stopA()
	stopA()
	if n := s.Watching("k"); n != 0 {
		t.Fatalf("Watching(k) = %d after stop, want 0", n)
	}

	// A scripted Release that answers true wakes, as a store release does.
	c, stopC, _ := s.WatchTurn(ctx, "k", tok)
	defer stopC()
	if ok, _ := s.Release(ctx, "k", "t"); !ok || !closed(c) || closed(b) {
		t.Fatalf("Release(k) = %v; k woken %v, other woken %v", ok, closed(c), closed(b))
	}
	s.Script(static.OpRelease, static.Deny)
	d, stopD, _ := s.WatchTurn(ctx, "k", tok)
	defer stopD()
	if ok, _ := s.Release(ctx, "k", "t"); ok || closed(d) {
		t.Fatalf("refused Release(k) = %v, woke the waiter %v", ok, closed(d))
	}

	if n := s.Break(); n != 2 || !closed(b) || !closed(d) {
		t.Fatalf("Break woke %d, want 2 (other and the last k)", n)
	}
	stopB()
}

func TestWatchHangHonoursContext(t *testing.T) {
	s := static.New()
	s.Script(static.OpWatch, static.Hang)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	if c, _, err := s.WatchTurn(ctx, "k", tok); c != nil || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("hung WatchTurn = %v, %v; want nil, DeadlineExceeded", c, err)
	}
	if n := s.Watching("k"); n != 0 {
		t.Fatalf("a failed WatchTurn left %d watches", n)
	}
	calls := s.Calls()
	if len(calls) != 1 || calls[0].Op != static.OpWatch || calls[0].Key != "k" || !calls[0].Done {
		t.Fatalf("call log = %+v", calls)
	}
}

func TestTurnsComeFromTheStoresLine(t *testing.T) {
	s := static.New()
	ctx := context.Background()
	holder, first, second := tok, "0000019a2b3c4d5f.0000000089abcdef0123456789abcdef", "0000019a2b3c4d60.0000000089abcdef0123456789abcdef"
	if ok, _ := s.Acquire(ctx, "k", holder, time.Minute); !ok {
		t.Fatal("Acquire(holder) refused")
	}
	for _, w := range []string{second, first} {
		if ok, _, err := s.AcquireInLine(ctx, "k", w, time.Minute, ""); ok || err != nil {
			t.Fatalf("AcquireInLine of a held key = %v, %v", ok, err)
		}
	}
	firstTurn, stopFirst, err := s.WatchTurn(ctx, "k", first)
	if err != nil {
		t.Fatal(err)
	}
	defer stopFirst()
	secondTurn, stopSecond, err := s.WatchTurn(ctx, "k", second)
	if err != nil {
		t.Fatal(err)
	}
	defer stopSecond()
	if ok, _ := s.Release(ctx, "k", holder); !ok {
		t.Fatal("Release(holder) failed")
	}
	select {
	case <-firstTurn:
	case <-time.After(5 * time.Second):
		t.Fatal("the first waiter's turn did not come")
	}
	if closed(secondTurn) {
		t.Fatal("the second waiter's turn came with the first's")
	}
	if err := s.LeaveLine(ctx, "k", first); err != nil {
		t.Fatal(err)
	}
	select {
	case <-secondTurn:
	case <-time.After(5 * time.Second):
		t.Fatal("the second waiter's turn did not come after the first left")
	}
	if got := s.Count(static.OpLeaveLine); got != 1 {
		t.Errorf("Count(leave-line) = %d, want 1", got)
	}
}
