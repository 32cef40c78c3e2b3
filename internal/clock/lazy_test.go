package clock

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

// The real clock's WithTimeout arms its timer only when waited on, and
// must still end as context.WithTimeout's context does.

func TestRealWithTimeoutEndsAtItsDeadline(t *testing.T) {
	ctx, cancel := Real{}.WithTimeout(context.Background(), time.Millisecond)
	defer cancel()
	<-ctx.Done()
	if err := ctx.Err(); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Err after Done = %v, want DeadlineExceeded", err)
	}
}

func TestRealWithTimeoutEndsUnwatched(t *testing.T) {
	ctx, cancel := Real{}.WithTimeout(context.Background(), time.Millisecond)
	defer cancel()
	d, ok := ctx.Deadline()
	if !ok {
		t.Fatal("no deadline")
	}
	time.Sleep(time.Until(d) + time.Millisecond)
	if err := ctx.Err(); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Err past the deadline, nobody waiting = %v, want DeadlineExceeded", err)
	}
	select {
	case <-ctx.Done():
	case <-time.After(time.Minute):
		t.Fatal("Done armed past the deadline did not close")
	}
}

func TestRealWithTimeoutCancel(t *testing.T) {
	for _, watched := range []bool{false, true} {
		ctx, cancel := Real{}.WithTimeout(context.Background(), time.Hour)
		if err := ctx.Err(); err != nil {
			t.Fatalf("Err before the deadline = %v", err)
		}
		var done <-chan struct{}
		if watched {
			done = ctx.Done()
		}
		cancel()
		cancel() // a second cancel is harmless
		if err := ctx.Err(); !errors.Is(err, context.Canceled) {
			t.Fatalf("watched %v: Err after cancel = %v, want Canceled", watched, err)
		}
		if done == nil {
			done = ctx.Done()
		}
		select {
		case <-done:
		default:
			t.Fatalf("watched %v: Done open after cancel", watched)
		}
	}
}

func TestRealWithTimeoutFollowsItsParent(t *testing.T) {
	type key struct{}
	parent, cancelParent := context.WithDeadline(context.WithValue(context.Background(), key{}, "v"), time.Now().Add(time.Hour))
	ctx, cancel := Real{}.WithTimeout(parent, 2*time.Hour)
	defer cancel()
	d, _ := ctx.Deadline()
	if pd, _ := parent.Deadline(); !d.Equal(pd) {
		t.Fatal("Deadline is not the parent's earlier one")
	}
	if v := ctx.Value(key{}); v != "v" {
		t.Fatalf("Value = %v, want the parent's", v)
	}
	child, cancelChild := context.WithCancel(ctx)
	defer cancelChild()
	cancelParent()
	if err := ctx.Err(); !errors.Is(err, context.Canceled) {
		t.Fatalf("Err after the parent's cancel = %v", err)
	}
	select {
	case <-child.Done():
	case <-time.After(time.Minute):
		t.Fatal("a context derived from it did not end with the parent")
	}
}

// TestRealWithTimeoutRaces arms and cancels from many goroutines at once,
// for the race detector: every waiter sees the end.
func TestRealWithTimeoutRaces(t *testing.T) {
	for range 100 {
		ctx, cancel := Real{}.WithTimeout(context.Background(), time.Hour)
		var wg sync.WaitGroup
		for i := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if i%2 == 0 {
					cancel()
					return
				}
				<-ctx.Done()
			}()
		}
		wg.Wait()
		if err := ctx.Err(); !errors.Is(err, context.Canceled) {
			t.Fatalf("Err = %v, want Canceled", err)
		}
	}
}

// TestRealWithTimeoutAfterFunc: functions registered on the context (as
// the context package does for contexts derived from it) run once it
// ends, unless stopped first; registered after the end, at once.
func TestRealWithTimeoutAfterFunc(t *testing.T) {
	ctx, cancel := Real{}.WithTimeout(context.Background(), time.Hour)
	ran := make(chan string, 3)
	context.AfterFunc(ctx, func() { ran <- "first" })
	stop := context.AfterFunc(ctx, func() { ran <- "stopped" })
	if !stop() {
		t.Fatal("stop of a pending function reported false")
	}
	child, cancelChild := context.WithCancel(ctx)
	defer cancelChild()
	cancel()
	select {
	case <-child.Done():
	case <-time.After(time.Minute):
		t.Fatal("a derived context did not end")
	}
	if got := <-ran; got != "first" {
		t.Fatalf("ran %q", got)
	}
	context.AfterFunc(ctx, func() { ran <- "late" })
	if got := <-ran; got != "late" {
		t.Fatalf("ran %q, want the function registered after the end", got)
	}
	select {
	case got := <-ran:
		t.Fatalf("ran %q too", got)
	case <-time.After(10 * time.Millisecond):
	}
}

func TestUnarmed(t *testing.T) {
	ctx, cancel := Real{}.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	if done, ok := Unarmed(ctx); !ok || done != nil {
		t.Fatalf("Unarmed of a fresh context under Background = %v, %v; want nil, true", done, ok)
	}
	ctx.Done()
	if _, ok := Unarmed(ctx); ok {
		t.Fatal("Unarmed after Done armed the timer = true")
	}

	parent, stop := context.WithCancel(context.Background())
	defer stop()
	ctx, cancel = Real{}.WithTimeout(parent, time.Hour)
	defer cancel()
	if done, ok := Unarmed(ctx); !ok || done != parent.Done() {
		t.Fatalf("Unarmed under a cancellable parent = %v, %v; want the parent's Done, true", done, ok)
	}
	std, cancelStd := context.WithTimeout(context.Background(), time.Hour)
	defer cancelStd()
	if _, ok := Unarmed(std); ok {
		t.Fatal("Unarmed of context.WithTimeout's context = true")
	}
}
