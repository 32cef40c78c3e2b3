package static_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/goredlock/goredlock/keyserver/static"
)

// TestSetFailsBetweenKeys: a reply that answers from the store and then
// fails keeps the first Keys keys of a set's call, or all of them.
func TestSetFailsBetweenKeys(t *testing.T) {
	ctx := context.Background()
	lost := errors.New("connection reset")
	keys := []string{"a", "b", "c"}
	for _, n := range []int{0, 1, 2} {
		s := static.New()
		s.Script(static.OpAcquire, static.Reply{Store: true, Err: lost, Keys: n})
		if ok, _, err := s.AcquireAll(ctx, keys, "t", time.Minute); ok || !errors.Is(err, lost) {
			t.Fatalf("Keys %d: AcquireAll = %v, %v; want false, %v", n, ok, err, lost)
		}
		s.Script(static.OpAcquire)
		kept := n
		if n == 0 {
			kept = len(keys)
		}
		for i, k := range keys {
			ok, err := s.Acquire(ctx, k, "x", time.Minute)
			if err != nil || ok != (i >= kept) {
				t.Errorf("Keys %d: Acquire(x) of %s = %v, %v; want %v (stored: the first %d)", n, k, ok, err, i >= kept, kept)
			}
		}
	}
}
