package clock

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var t0 = time.Unix(1_700_000_000, 0)

func TestFakeAfterFuncFiresInOrderAtItsTime(t *testing.T) {
	f := NewFake(t0)
	got := make(chan time.Duration, 3)
	for _, d := range []time.Duration{3 * time.Second, time.Second, 2 * time.Second} {
		f.AfterFunc(d, func() { got <- d })
	}
	f.Advance(1500 * time.Millisecond)
	if d := <-got; d != time.Second {
		t.Fatalf("first timer fired was %v, want 1s", d)
	}
	f.Advance(5 * time.Second)
	a, b := <-got, <-got
	if a+b != 5*time.Second {
		t.Fatalf("timers fired %v and %v, want 2s and 3s", a, b)
	}
	if now := f.Now(); !now.Equal(t0.Add(6500 * time.Millisecond)) {
		t.Fatalf("Now = %v after advancing 6.5s", now.Sub(t0))
	}
}

func TestFakeStopAndReset(t *testing.T) {
	f := NewFake(t0)
	var fired atomic.Int32
	tm := f.AfterFunc(time.Second, func() { fired.Add(1) })
	if !tm.Stop() {
		t.Fatal("Stop of a pending timer reported false")
	}
	if tm.Stop() {
		t.Fatal("second Stop reported true")
	}
	f.Advance(2 * time.Second)
	if tm.Reset(time.Second) {
		t.Fatal("Reset of a stopped timer reported it pending")
	}
	if f.Pending() != 1 {
		t.Fatalf("Pending = %d after Reset, want 1", f.Pending())
	}
	f.Advance(time.Second)
	deadline := time.Now().Add(5 * time.Second)
	for fired.Load() != 1 {
		if time.Now().After(deadline) {
			t.Fatal("reset timer never fired")
		}
		time.Sleep(time.Millisecond)
	}
}

func TestFakeSleep(t *testing.T) {
	f := NewFake(t0)
	done := make(chan error, 1)
	go func() { done <- f.Sleep(context.Background(), time.Minute) }()
	ds, err := f.BlockUntilSleepers(1, 5*time.Second)
	if err != nil || len(ds) != 1 || ds[0] != time.Minute {
		t.Fatalf("BlockUntilSleepers = %v, %v", ds, err)
	}
	f.Advance(59 * time.Second)
	select {
	case <-done:
		t.Fatal("Sleep returned early")
	default:
	}
	f.Advance(time.Second)
	if err := <-done; err != nil {
		t.Fatalf("Sleep = %v", err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	go func() { done <- f.Sleep(ctx, time.Minute) }()
	if _, err := f.BlockUntilSleepers(1, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled Sleep = %v", err)
	}
	if f.Pending() != 0 {
		t.Fatalf("a cancelled Sleep left %d waiters", f.Pending())
	}
	if _, err := f.BlockUntilSleepers(1, 10*time.Millisecond); err == nil {
		t.Fatal("BlockUntilSleepers with no sleeper did not time out")
	}
}

func TestFakeWithTimeout(t *testing.T) {
	f := NewFake(t0)
	ctx, cancel := f.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if d, ok := ctx.Deadline(); !ok || !d.Equal(t0.Add(time.Second)) {
		t.Fatalf("Deadline = %v, %v", d, ok)
	}
	f.Advance(time.Second)
	<-ctx.Done()
	if !errors.Is(ctx.Err(), context.DeadlineExceeded) {
		t.Fatalf("Err = %v, want DeadlineExceeded", ctx.Err())
	}

	ctx2, cancel2 := f.WithTimeout(context.Background(), time.Second)
	cancel2()
	if !errors.Is(ctx2.Err(), context.Canceled) {
		t.Fatalf("Err after cancel = %v, want Canceled", ctx2.Err())
	}
	if f.Pending() != 0 {
		t.Fatalf("cancel left %d waiters", f.Pending())
	}
}

func TestRealClock(t *testing.T) {
	var c Clock = Real{}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := c.Sleep(ctx, time.Hour); !errors.Is(err, context.Canceled) {
		t.Fatalf("Sleep with a cancelled context = %v", err)
	}
	if err := c.Sleep(context.Background(), time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if c.Since(c.Now()) < 0 {
		t.Fatal("Since went backwards")
	}
	tctx, tcancel := c.WithTimeout(context.Background(), time.Millisecond)
	defer tcancel()
	<-tctx.Done()
	fired := make(chan struct{})
	c.AfterFunc(time.Millisecond, func() { close(fired) })
	<-fired
}

func TestFakeBlockUntilWaitersCountsTimersAndDeadlines(t *testing.T) {
	f := NewFake(t0)
	f.AfterFunc(time.Minute, func() {})
	if ds, err := f.BlockUntilSleepers(1, 10*time.Millisecond); err == nil {
		t.Fatalf("a timer counted as a sleeper: %v", ds)
	}
	_, cancel := f.WithTimeout(context.Background(), time.Second)
	defer cancel()
	ds, err := f.BlockUntilWaiters(2, 5*time.Second)
	if err != nil || len(ds) != 2 || ds[0] != time.Second || ds[1] != time.Minute {
		t.Fatalf("BlockUntilWaiters = %v, %v", ds, err)
	}
}

// TestMonoNow: MonoNow moves with the monotonic clock, as time.Now does,
// and carries a monotonic reading, so that Since and Until of it read no
// wall clock.
func TestMonoNow(t *testing.T) {
	before := time.Now()
	m := MonoNow()
	after := time.Now()
	if m.Before(before) || m.After(after) {
		t.Fatalf("MonoNow() = %v, not between %v and %v", m, before, after)
	}
	if m.Round(0) == m {
		t.Fatal("MonoNow carries no monotonic reading")
	}
	time.Sleep(time.Millisecond)
	if d := time.Since(m); d < time.Millisecond {
		t.Fatalf("Since(MonoNow()) after a 1 ms sleep = %v", d)
	}
}
