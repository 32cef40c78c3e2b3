package main

import (
	"context"
	"errors"
	"testing"
	"time"
)

// hangingLock is a library that never returns from a lock call until
// released, whatever its context says.
type hangingLock struct{ release chan struct{} }

func (h hangingLock) lock(context.Context, string) (func(context.Context) error, error) {
	<-h.release
	return nil, errors.New("released")
}

func (hangingLock) close() error { return nil }

// TestCaseBoundedWhenLibraryHangs checks that a case ends soon after its
// window even when the library's calls never return, and reports the
// goroutines it left; and that a constructor that does not return gives a
// start error after the wait.
func TestCaseBoundedWhenLibraryHangs(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	p := peer{name: "hanging", open: func([]string, settings) (locker, error) { return hangingLock{release}, nil }}
	w := workload{name: "4", goroutines: 4, clients: 1}
	undone := false
	h := hooks{undo: func() error { undone = true; return nil }}
	start := time.Now()
	sm, err := runCaseWith(context.Background(), p, w, nil, settings{}, timing{duration: 50 * time.Millisecond}, nil, "test", h)
	if err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > 50*time.Millisecond+stuckAfter+abandonAfter+2*time.Second {
		t.Errorf("the case took %v", took)
	}
	if sm.stuck != 4 || sm.abandoned != 4 || sm.grants != 0 || !undone {
		t.Errorf("stuck %d, abandoned %d, grants %d, undone %v; want 4, 4, 0, true", sm.stuck, sm.abandoned, sm.grants, undone)
	}

	slow := peer{name: "slow", open: func([]string, settings) (locker, error) {
		<-release
		return hangingLock{release}, nil
	}}
	start = time.Now()
	_, err = runCaseWith(context.Background(), slow, w, nil, settings{}, timing{duration: time.Millisecond}, nil, "test", hooks{openWait: 100 * time.Millisecond})
	var se *startError
	if !errors.As(err, &se) {
		t.Fatalf("a constructor that does not return: %v, want a start error", err)
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("the start error took %v", took)
	}
}
