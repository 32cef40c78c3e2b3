package chaos

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/goredlock/goredlock/keyserver"
)

// primRecorder is a recorder that also keeps the primitives' holds
// (keyserver.HoldKeeper), as the Redis key server does.
type primRecorder struct{ *recorder }

func (r primRecorder) AcquireHold(_ context.Context, h keyserver.HoldSpec, ttl time.Duration) (bool, keyserver.HoldReply, error) {
	r.note(fmt.Sprint("AcquireHold ", h.Kind), ttl)
	switch h.Kind {
	case keyserver.PermitHold:
		return false, keyserver.HoldReply{Free: []int{2}, Left: r.left}, nil
	case keyserver.LeaderHold:
		return true, keyserver.HoldReply{Fence: 11}, nil
	}
	return false, keyserver.HoldReply{Left: r.left}, nil
}

func (r primRecorder) ExtendHold(_ context.Context, h keyserver.HoldSpec, ttl time.Duration) (bool, error) {
	r.note(fmt.Sprint("ExtendHold ", h.Kind), ttl)
	return true, nil
}

func (r primRecorder) ReleaseHold(_ context.Context, h keyserver.HoldSpec) (bool, error) {
	r.note(fmt.Sprint("ReleaseHold ", h.Kind), 0)
	return true, nil
}

func (r primRecorder) WatchHolds(_ context.Context, h keyserver.HoldSpec) (<-chan struct{}, func(), error) {
	r.note(fmt.Sprint("WatchHolds ", h.Kind), 0)
	return nil, func() {}, nil
}

func (r primRecorder) ReadLeader(context.Context, string) (keyserver.Leadership, error) {
	r.note("ReadLeader", 0)
	return keyserver.Leadership{Token: "t", Value: "v", Left: r.left}, nil
}

func TestSkewedKeepsThePrimitivesOfTheServer(t *testing.T) {
	clocks := NewClocks(1)
	r := &recorder{}
	if _, ok := Skewed(bothServer{r}, clocks, 0).(keyserver.HoldKeeper); ok {
		t.Error("Skewed of a server without primitives is a HoldKeeper")
	}
	s := Skewed(primRecorder{r}, clocks, 0)
	if _, ok := s.(keyserver.HoldKeeper); !ok {
		t.Error("Skewed of a HoldKeeper is none")
	}
	if _, ok := s.(keyserver.Notifier); !ok {
		t.Error("Skewed with primitives is no Notifier")
	}
	if _, ok := s.(keyserver.Fencer); !ok {
		t.Error("Skewed with primitives is no Fencer, which elections need")
	}
	if _, ok := s.(keyserver.InProcess); ok {
		t.Error("Skewed with primitives is InProcess, which a forwarding wrapper must not be")
	}
}

func TestSkewedScalesThePrimitivesTTLs(t *testing.T) {
	ctx := context.Background()
	r := &recorder{left: 400 * time.Millisecond}
	clocks := NewClocks(1)
	clocks.Set(0, 1.25) // runs 25% fast: a 1 s TTL lives 800 ms
	hk := Skewed(primRecorder{r}, clocks, 0).(keyserver.HoldKeeper)

	const ttl = time.Second
	permit := keyserver.HoldSpec{Kind: keyserver.PermitHold, Key: "k", Token: "t", Permits: 3}
	_, p, _ := hk.AcquireHold(ctx, permit, ttl)
	hk.ExtendHold(ctx, permit, ttl) //nolint:errcheck // recorded
	hk.ReleaseHold(ctx, permit)     //nolint:errcheck
	_, stop, _ := hk.WatchHolds(ctx, permit)
	stop()
	read := keyserver.HoldSpec{Kind: keyserver.ReadHold, Key: "k", Token: "t"}
	write := keyserver.HoldSpec{Kind: keyserver.WaitingWriteHold, Key: "k", Token: "t"}
	_, hr, _ := hk.AcquireHold(ctx, read, ttl)
	_, hw, _ := hk.AcquireHold(ctx, write, ttl)
	hk.ExtendHold(ctx, read, ttl) //nolint:errcheck
	hk.ReleaseHold(ctx, write)    //nolint:errcheck
	_, stop, _ = hk.WatchHolds(ctx, write)
	stop()
	leader := keyserver.HoldSpec{Kind: keyserver.LeaderHold, Key: "k", Token: "t", Value: "v"}
	_, hl, _ := hk.AcquireHold(ctx, leader, ttl)
	hk.ExtendHold(ctx, leader, ttl) //nolint:errcheck
	hk.ReleaseHold(ctx, leader)     //nolint:errcheck
	ld, _ := hk.ReadLeader(ctx, "k")
	_, stop, _ = hk.WatchHolds(ctx, keyserver.HoldSpec{Kind: keyserver.LeaderHold, Key: "k"})
	stop()

	want := []string{"AcquireHold 1", "ExtendHold 1", "ReleaseHold 1", "WatchHolds 1",
		"AcquireHold 2", "AcquireHold 4", "ExtendHold 2", "ReleaseHold 4", "WatchHolds 4",
		"AcquireHold 5", "ExtendHold 5", "ReleaseHold 5", "ReadLeader", "WatchHolds 5"}
	if !slices.Equal(r.calls, want) {
		t.Fatalf("calls %v, want %v", r.calls, want)
	}
	if len(r.ttls) != 7 {
		t.Fatalf("TTLs sent %v, want 7", r.ttls)
	}
	for _, got := range r.ttls {
		if got != 800*time.Millisecond {
			t.Fatalf("TTLs sent %v, want each 800ms", r.ttls)
		}
	}
	// 400 ms left in true time is 500 ms on a clock that runs 25% fast.
	for what, left := range map[string]time.Duration{"permits": p.Left, "reader's holder": hr.Left,
		"writer's holder": hw.Left, "leader": ld.Left} {
		if left != 500*time.Millisecond {
			t.Errorf("%s time left %v, want 500ms", what, left)
		}
	}
	if !slices.Equal(p.Free, []int{2}) || hl.Fence != 11 || ld.Value != "v" || ld.Token != "t" {
		t.Errorf("replies changed on the way: free %v, term %d, leader %+v", p.Free, hl.Fence, ld)
	}
}
