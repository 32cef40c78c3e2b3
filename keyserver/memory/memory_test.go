package memory_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/goredlock/goredlock/internal/clock"
	"github.com/goredlock/goredlock/keyserver"
	"github.com/goredlock/goredlock/keyserver/keyservertest"
	"github.com/goredlock/goredlock/keyserver/memory"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestConformanceFakeClock(t *testing.T) {
	fc := clock.NewFake(time.Unix(1_700_000_000, 0))
	keyservertest.Run(t, func(t *testing.T) keyserver.KeyServer {
		s := memory.New(memory.WithNow(fc.Now))
		t.Cleanup(func() { s.Close() })
		return s
	}, keyservertest.WithAdvance(fc.Advance))
}

func TestConformanceRealClock(t *testing.T) {
	keyservertest.Run(t, func(t *testing.T) keyserver.KeyServer {
		s := memory.New()
		t.Cleanup(func() { s.Close() })
		return s
	}, keyservertest.WithTimeScale(0.2))
}

func TestSweepDropsAbandonedKeys(t *testing.T) {
	fc := clock.NewFake(time.Unix(1_700_000_000, 0))
	s := memory.New(memory.WithNow(fc.Now), memory.WithSweepInterval(time.Millisecond))
	defer s.Close()
	ctx := context.Background()
	for _, k := range []string{"a", "b", "c"} {
		if ok, err := s.Acquire(ctx, k, "tok", time.Second); !ok || err != nil {
			t.Fatalf("Acquire(%s) = %v, %v", k, ok, err)
		}
	}
	fc.Advance(time.Second)
	// The sweep runs on real time; wait for it to have emptied the map.
	deadline := time.Now().Add(5 * time.Second)
	for memory.Stored(s) != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d expired keys still stored after the sweep had 5s to run", memory.Stored(s))
		}
		time.Sleep(time.Millisecond)
	}
}

func TestCloseStopsServer(t *testing.T) {
	s := memory.New()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := s.Acquire(context.Background(), "k", "t", time.Second); !errors.Is(err, memory.ErrClosed) {
		t.Fatalf("Acquire after Close: %v, want ErrClosed", err)
	}
}

func BenchmarkAcquireRelease(b *testing.B) {
	s := memory.New()
	defer s.Close()
	ctx := context.Background()
	for i := 0; i < b.N; i++ {
		s.Acquire(ctx, "k", "t", time.Second) //nolint:errcheck
		s.Release(ctx, "k", "t")              //nolint:errcheck
	}
}
