package static_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/goredlock/goredlock/internal/clock"
	"github.com/goredlock/goredlock/keyserver"
	"github.com/goredlock/goredlock/keyserver/keyservertest"
	"github.com/goredlock/goredlock/keyserver/static"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestConformance(t *testing.T) {
	fc := clock.NewFake(time.Unix(1_700_000_000, 0))
	keyservertest.Run(t, func(t *testing.T) keyserver.KeyServer {
		return static.New(static.WithNow(fc.Now))
	}, keyservertest.WithAdvance(fc.Advance))
}

func TestScriptSequenceThenLastRepeats(t *testing.T) {
	boom := errors.New("boom")
	s := static.New(static.WithAcquire(static.Fail(boom), static.Deny, static.Grant))
	ctx := context.Background()
	want := []struct {
		ok  bool
		err error
	}{{false, boom}, {false, nil}, {true, nil}, {true, nil}}
	for i, w := range want {
		ok, err := s.Acquire(ctx, "k", "t", time.Second)
		if ok != w.ok || !errors.Is(err, w.err) || (w.err == nil && err != nil) {
			t.Errorf("call %d = %v, %v; want %v, %v", i, ok, err, w.ok, w.err)
		}
	}
	if got := s.Count(static.OpAcquire); got != 4 {
		t.Errorf("Count(acquire) = %d, want 4", got)
	}
}

func TestTableRows(t *testing.T) {
	c := static.Table([][]bool{{true, true}, {false, false}, {true, false}})
	ctx := context.Background()
	for i, want := range [][2]bool{{true, true}, {false, false}, {true, false}} {
		a, _ := c[i].Acquire(ctx, "k", "t", time.Second)
		e, _ := c[i].Extend(ctx, "k", "t", time.Second)
		r, _ := c[i].Release(ctx, "k", "t")
		if a != want[0] || e != want[0] || r != want[1] {
			t.Errorf("server %d: acquire %v extend %v release %v; want %v %v %v", i, a, e, r, want[0], want[0], want[1])
		}
	}
	if got := len(c.KeyServers()); got != 3 {
		t.Errorf("KeyServers() has %d servers, want 3", got)
	}
	if got := c.Count(static.OpRelease); got != 3 {
		t.Errorf("Count(release) = %d, want 3", got)
	}
}

func TestHangHonoursContext(t *testing.T) {
	s := static.New(static.WithRelease(static.Hang))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	ok, err := s.Release(ctx, "k", "t")
	if ok || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("hung Release = %v, %v; want false, DeadlineExceeded", ok, err)
	}
	calls := s.Calls()
	if len(calls) != 1 || !calls[0].Done || calls[0].Op != static.OpRelease {
		t.Fatalf("call log = %+v", calls)
	}
}

func TestDelayHonoursContext(t *testing.T) {
	s := static.New(static.WithAcquire(static.Reply{OK: true, Delay: time.Hour}))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if ok, err := s.Acquire(ctx, "k", "t", time.Second); ok || !errors.Is(err, context.Canceled) {
		t.Fatalf("delayed Acquire with a cancelled context = %v, %v", ok, err)
	}
	s.Script(static.OpAcquire, static.Reply{OK: true, Delay: time.Millisecond})
	if ok, err := s.Acquire(context.Background(), "k", "t", time.Second); !ok || err != nil {
		t.Fatalf("delayed Acquire = %v, %v; want true, nil", ok, err)
	}
}

func TestScriptedCallsStillValidateInput(t *testing.T) {
	s := static.Fixed(true, true)
	if _, err := s.Acquire(context.Background(), "", "t", time.Second); !errors.Is(err, keyserver.ErrInvalidArgument) {
		t.Fatalf("Acquire with empty key: %v, want ErrInvalidArgument", err)
	}
}

func TestBeforeHookSeesCall(t *testing.T) {
	var seen []static.Call
	s := static.New(static.WithBefore(func(_ context.Context, c static.Call) { seen = append(seen, c) }))
	s.Extend(context.Background(), "k", "t", time.Second) //nolint:errcheck
	if len(seen) != 1 || seen[0].Op != static.OpExtend || seen[0].Key != "k" || seen[0].TTL != time.Second {
		t.Fatalf("hook saw %+v", seen)
	}
}
