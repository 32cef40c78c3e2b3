package chaos

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/goredlock/goredlock/keyserver"
)

// setRecorder is a primRecorder that also takes sets of keys, as the
// Redis key server does.
type setRecorder struct{ primRecorder }

func (r setRecorder) AcquireAll(_ context.Context, keys []string, _ string, ttl time.Duration) (bool, keyserver.Holder, error) {
	r.note("AcquireAll", ttl)
	r.keys = append(r.keys, keys)
	return false, keyserver.Holder{Left: r.left, Rank: keyserver.HolderFirst}, nil
}

func (r setRecorder) ExtendAll(_ context.Context, keys []string, _ string, ttl time.Duration) (bool, error) {
	r.note("ExtendAll", ttl)
	r.keys = append(r.keys, keys)
	return true, nil
}

func (r setRecorder) ReleaseAll(_ context.Context, keys []string, _ string) (bool, error) {
	r.note("ReleaseAll", 0)
	r.keys = append(r.keys, keys)
	return true, nil
}

func (r setRecorder) AcquireAllInLine(_ context.Context, keys []string, _ string, ttl time.Duration) (bool, keyserver.Holder, error) {
	r.note("AcquireAllInLine", ttl)
	r.keys = append(r.keys, keys)
	return false, keyserver.Holder{Left: r.left, Rank: keyserver.HolderFirst}, nil
}

func (r setRecorder) LeaveLines(_ context.Context, keys []string, _ string) error {
	r.note("LeaveLines", 0)
	r.keys = append(r.keys, keys)
	return nil
}

func TestSkewedKeepsTheSetsOfTheServer(t *testing.T) {
	clocks := NewClocks(1)
	r := &recorder{}
	if _, ok := Skewed(primRecorder{r}, clocks, 0).(keyserver.SetLocker); ok {
		t.Error("Skewed of a server without sets takes sets")
	}
	s := Skewed(setRecorder{primRecorder{r}}, clocks, 0)
	if _, ok := s.(keyserver.SetLocker); !ok {
		t.Fatal("Skewed of a server with sets lacks them: every AcquireAll of the skew scenarios would be refused")
	}
	if _, ok := s.(keyserver.HoldKeeper); !ok {
		t.Error("Skewed with sets lost the primitives")
	}
	if _, ok := s.(keyserver.InProcess); ok {
		t.Error("Skewed with sets is InProcess, which a forwarding wrapper must not be")
	}
}

func TestSkewedScalesTheSetsTTLs(t *testing.T) {
	ctx := context.Background()
	r := &recorder{left: 400 * time.Millisecond}
	clocks := NewClocks(1)
	clocks.Set(0, 1.25) // runs 25% fast: a 1 s TTL lives 800 ms
	s := Skewed(setRecorder{primRecorder{r}}, clocks, 0).(keyserver.SetLocker)

	keys := []string{"a", "b"}
	_, h, _ := s.AcquireAll(ctx, keys, "t", time.Second)
	s.ExtendAll(ctx, keys, "t", time.Second) //nolint:errcheck // recorded
	s.ReleaseAll(ctx, keys, "t")             //nolint:errcheck

	if want := []string{"AcquireAll", "ExtendAll", "ReleaseAll"}; !slices.Equal(r.calls, want) {
		t.Fatalf("calls %v, want %v", r.calls, want)
	}
	if want := []time.Duration{800 * time.Millisecond, 800 * time.Millisecond}; !slices.Equal(r.ttls, want) {
		t.Errorf("TTLs sent %v, want %v", r.ttls, want)
	}
	for _, k := range r.keys {
		if !slices.Equal(k, keys) {
			t.Errorf("keys sent %v, want %v each time", r.keys, keys)
			break
		}
	}
	// 400 ms left in true time is 500 ms on a clock that runs 25% fast.
	if h.Left != 500*time.Millisecond || h.Rank != keyserver.HolderFirst {
		t.Errorf("holder %+v, want 500ms left and the rank as it came", h)
	}
}
