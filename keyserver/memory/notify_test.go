package memory_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/goredlock/goredlock/internal/clock"
	"github.com/goredlock/goredlock/internal/layout"
	"github.com/goredlock/goredlock/keyserver"
	"github.com/goredlock/goredlock/keyserver/memory"
)

func closed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// token returns a token that carries a rank: call orders the calls.
func token(call, attempt int) string {
	return fmt.Sprintf("%016x.%08x%024x", 0x19a2b3c4d00+call, call, attempt)
}

func TestTurnComesWithAReleaseNotAnExpiry(t *testing.T) {
	fc := clock.NewFake(time.Unix(1_700_000_000, 0))
	s := memory.New(memory.WithNow(fc.Now), memory.WithSweepInterval(0))
	defer s.Close()
	ctx := context.Background()
	holder, waiter := token(1, 1), token(2, 1)
	if ok, _ := s.Acquire(ctx, "k", holder, time.Second); !ok {
		t.Fatal("Acquire(holder) refused on an empty server")
	}
	if ok, _, _ := s.AcquireInLine(ctx, "k", waiter, time.Second, ""); ok {
		t.Fatal("AcquireInLine(waiter) granted a held key")
	}
	turn, stop, err := s.WatchTurn(ctx, "k", waiter)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	fc.Advance(time.Second)
	ok, h, err := s.AcquireOrHolder(ctx, "k", "b", time.Second)
	if !ok || h != (keyserver.Holder{}) || err != nil {
		t.Fatalf("AcquireOrHolder(b) after the holder's expiry = %v, %+v, %v; want true, no holder, nil", ok, h, err)
	}
	if closed(turn) {
		t.Fatal("an expiry gave the waiter its turn")
	}
	fc.Advance(300 * time.Millisecond)
	if ok, h, _ := s.AcquireOrHolder(ctx, "k", "c", time.Second); ok || h.Left != 700*time.Millisecond {
		t.Fatalf("AcquireOrHolder(c) = %v, %+v; want false, 700ms exactly on the fake clock", ok, h)
	}
	if ok, _ := s.Release(ctx, "k", "b"); !ok {
		t.Fatal("Release(b) failed")
	}
	if !closed(turn) {
		t.Fatal("the release did not give the waiter its turn")
	}
	if ok, h, _ := s.AcquireOrHolder(ctx, "k", "c", time.Second); ok || h.Left != layout.ClaimTTL || h.Rank != 0 {
		t.Fatalf("AcquireOrHolder(c) of the promised key = %v, %+v; want false, the whole claim's TTL left", ok, h)
	}
	stop()
	if n := memory.Watchers(s, "k"); n != 0 {
		t.Fatalf("%d watchers left after stop", n)
	}
}

func TestStopLeavesNothing(t *testing.T) {
	s := memory.New()
	defer s.Close()
	ctx := context.Background()
	var stops []func()
	for i := 0; i < 5; i++ {
		_, stop, err := s.WatchTurn(ctx, "k", token(i, 1))
		if err != nil {
			t.Fatal(err)
		}
		stops = append(stops, stop)
	}
	stops[2]()
	stops[2]() // a second stop changes nothing
	if n := memory.Watchers(s, "k"); n != 4 {
		t.Fatalf("%d watchers after one stop, want 4", n)
	}
	for _, stop := range stops {
		stop()
	}
	if n := memory.Watchers(s, "k"); n != 0 {
		t.Fatalf("%d watchers after every stop", n)
	}
}

func TestLineLapses(t *testing.T) {
	fc := clock.NewFake(time.Unix(1_700_000_000, 0))
	s := memory.New(memory.WithNow(fc.Now), memory.WithSweepInterval(0))
	defer s.Close()
	ctx := context.Background()
	holder, gone := token(1, 1), token(2, 1)
	s.Acquire(ctx, "k", holder, time.Minute)
	s.AcquireInLine(ctx, "k", gone, time.Minute, "")
	fc.Advance(keyserver.LineTTL)
	if ok, _ := s.Release(ctx, "k", holder); !ok {
		t.Fatal("Release(holder) failed")
	}
	if ok, _ := s.Acquire(ctx, "k", "x", time.Minute); !ok {
		t.Fatal("the key was promised to a waiter whose place had lapsed")
	}
}

func TestCloseWakesWatchers(t *testing.T) {
	s := memory.New()
	turn, stop, err := s.WatchTurn(context.Background(), "k", token(1, 1))
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	s.Close()
	if !closed(turn) {
		t.Fatal("Close left a waiter asleep")
	}
	if _, _, err := s.WatchTurn(context.Background(), "k", token(1, 1)); !errors.Is(err, memory.ErrClosed) {
		t.Fatalf("WatchTurn after Close: %v, want ErrClosed", err)
	}
	if _, _, err := s.AcquireOrHolder(context.Background(), "k", "t", time.Second); !errors.Is(err, memory.ErrClosed) {
		t.Fatalf("AcquireOrHolder after Close: %v, want ErrClosed", err)
	}
}
