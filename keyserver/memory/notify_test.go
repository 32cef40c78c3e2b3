package memory_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/goredlock/goredlock/internal/clock"
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

func TestWatchWakesOnReleaseNotOnExpiry(t *testing.T) {
	fc := clock.NewFake(time.Unix(1_700_000_000, 0))
	s := memory.New(memory.WithNow(fc.Now), memory.WithSweepInterval(0))
	defer s.Close()
	ctx := context.Background()
	if ok, _ := s.Acquire(ctx, "k", "a", time.Second); !ok {
		t.Fatal("Acquire(a) refused on an empty server")
	}
	released, stop, err := s.Watch(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	fc.Advance(time.Second)
	ok, h, err := s.AcquireOrHolder(ctx, "k", "b", time.Second)
	if !ok || h != (keyserver.Holder{}) || err != nil {
		t.Fatalf("AcquireOrHolder(b) after a's expiry = %v, %+v, %v; want true, no holder, nil", ok, h, err)
	}
	if closed(released) {
		t.Fatal("an expiry woke the waiter")
	}
	fc.Advance(300 * time.Millisecond)
	if ok, h, _ := s.AcquireOrHolder(ctx, "k", "c", time.Second); ok || h.Left != 700*time.Millisecond {
		t.Fatalf("AcquireOrHolder(c) = %v, %+v; want false, 700ms exactly on the fake clock", ok, h)
	}
	if ok, _ := s.Release(ctx, "k", "b"); !ok {
		t.Fatal("Release(b) failed")
	}
	if !closed(released) {
		t.Fatal("the release did not wake the waiter")
	}
	if n := memory.Watchers(s, "k"); n != 0 {
		t.Fatalf("%d watchers left after the wake", n)
	}
}

func TestStopLeavesNothing(t *testing.T) {
	s := memory.New()
	defer s.Close()
	ctx := context.Background()
	var stops []func()
	for i := 0; i < 5; i++ {
		_, stop, err := s.Watch(ctx, "k")
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

func TestCloseWakesWatchers(t *testing.T) {
	s := memory.New()
	released, stop, err := s.Watch(context.Background(), "k")
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	s.Close()
	if !closed(released) {
		t.Fatal("Close left a waiter asleep")
	}
	if _, _, err := s.Watch(context.Background(), "k"); !errors.Is(err, memory.ErrClosed) {
		t.Fatalf("Watch after Close: %v, want ErrClosed", err)
	}
	if _, _, err := s.AcquireOrHolder(context.Background(), "k", "t", time.Second); !errors.Is(err, memory.ErrClosed) {
		t.Fatalf("AcquireOrHolder after Close: %v, want ErrClosed", err)
	}
}
