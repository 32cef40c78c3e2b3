package chaos

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/goredlock/goredlock/keyserver"
)

// recorder is a key server that records the TTLs it is given and reports
// a fixed time left for every holder.
type recorder struct {
	ttls  []time.Duration
	calls []string
	keys  [][]string // of the calls about sets
	left  time.Duration
}

func (r *recorder) note(call string, ttl time.Duration) {
	r.calls = append(r.calls, call)
	if ttl != 0 {
		r.ttls = append(r.ttls, ttl)
	}
}

func (r *recorder) Acquire(_ context.Context, _, _ string, ttl time.Duration) (bool, error) {
	r.note("Acquire", ttl)
	return true, nil
}

func (r *recorder) Extend(_ context.Context, _, _ string, ttl time.Duration) (bool, error) {
	r.note("Extend", ttl)
	return true, nil
}

func (r *recorder) Release(context.Context, string, string) (bool, error) {
	r.note("Release", 0)
	return true, nil
}

func (r *recorder) AcquireOrHolder(_ context.Context, _, _ string, ttl time.Duration) (bool, keyserver.Holder, error) {
	r.note("AcquireOrHolder", ttl)
	return false, keyserver.Holder{Left: r.left, Rank: -1}, nil
}

func (r *recorder) AcquireInLine(_ context.Context, _, _ string, ttl time.Duration, _ string) (bool, keyserver.Holder, error) {
	r.note("AcquireInLine", ttl)
	return false, keyserver.Holder{Left: r.left, Rank: 1}, nil
}

func (r *recorder) WatchTurn(context.Context, string, string) (<-chan struct{}, func(), error) {
	r.note("WatchTurn", 0)
	return nil, func() {}, nil
}

func (r *recorder) LeaveLine(context.Context, string, string) error {
	r.note("LeaveLine", 0)
	return nil
}

func (r *recorder) ReleaseInLine(context.Context, string, string) (bool, error) {
	r.note("ReleaseInLine", 0)
	return true, nil
}

func (r *recorder) WatchContention(context.Context, string, string) (contended, broken <-chan struct{}, stop func(), err error) {
	r.note("WatchContention", 0)
	return nil, nil, func() {}, nil
}

func (r *recorder) AcquireFenced(_ context.Context, _, _ string, ttl time.Duration) (bool, uint64, error) {
	r.note("AcquireFenced", ttl)
	return true, 7, nil
}

func (r *recorder) RaiseFence(context.Context, string, uint64) (uint64, error) {
	r.note("RaiseFence", 0)
	return 3, nil
}

func (r *recorder) InProcess() {}

// The four sets of abilities a server can have, made of one recorder.
type (
	plainServer    struct{ keyserver.KeyServer }
	notifierServer struct{ keyserver.Notifier }
	fencerServer   struct{ keyserver.Fencer }
	bothServer     struct{ *recorder }
)

func TestSkewedKeepsTheAbilitiesOfTheServer(t *testing.T) {
	r := &recorder{}
	clocks := NewClocks(1)
	for _, tc := range []struct {
		name             string
		ks               keyserver.KeyServer
		notifier, fencer bool
	}{
		{"plain", plainServer{r}, false, false},
		{"notifier", notifierServer{r}, true, false},
		{"fencer", fencerServer{r}, false, true},
		{"both", bothServer{r}, true, true},
	} {
		s := Skewed(tc.ks, clocks, 0)
		if _, ok := s.(keyserver.Notifier); ok != tc.notifier {
			t.Errorf("%s: Skewed is a Notifier: %v, want %v", tc.name, ok, tc.notifier)
		}
		if _, ok := s.(keyserver.Fencer); ok != tc.fencer {
			t.Errorf("%s: Skewed is a Fencer: %v, want %v", tc.name, ok, tc.fencer)
		}
		if _, ok := s.(keyserver.InProcess); ok {
			t.Errorf("%s: Skewed is InProcess, which a forwarding wrapper must not be", tc.name)
		}
	}
}

func TestSkewedScalesEveryTTLAndForwardsEveryMethod(t *testing.T) {
	ctx := context.Background()
	r := &recorder{left: 400 * time.Millisecond}
	clocks := NewClocks(2)
	clocks.Set(1, 1.25) // runs 25% fast: a 1 s TTL lives 800 ms
	s := Skewed(bothServer{r}, clocks, 1)
	n, f := s.(keyserver.Notifier), s.(keyserver.Fencer)

	const ttl = time.Second
	s.Acquire(ctx, "k", "t", ttl) //nolint:errcheck // recorded
	s.Extend(ctx, "k", "t", ttl)  //nolint:errcheck
	s.Release(ctx, "k", "t")      //nolint:errcheck
	_, h1, _ := n.AcquireOrHolder(ctx, "k", "t", ttl)
	_, h2, _ := n.AcquireInLine(ctx, "k", "t", ttl, "")
	_, stop, _ := n.WatchTurn(ctx, "k", "t")
	stop()
	n.LeaveLine(ctx, "k", "t")     //nolint:errcheck
	n.ReleaseInLine(ctx, "k", "t") //nolint:errcheck
	_, _, stop, _ = n.WatchContention(ctx, "k", "t")
	stop()
	_, fence, _ := f.AcquireFenced(ctx, "k", "t", ttl)
	prev, _ := f.RaiseFence(ctx, "k", 9)

	want := []string{"Acquire", "Extend", "Release", "AcquireOrHolder", "AcquireInLine", "WatchTurn", "LeaveLine", "ReleaseInLine", "WatchContention", "AcquireFenced", "RaiseFence"}
	if len(r.calls) != len(want) {
		t.Fatalf("calls %v, want %v", r.calls, want)
	}
	for i := range want {
		if r.calls[i] != want[i] {
			t.Fatalf("calls %v, want %v", r.calls, want)
		}
	}
	for _, got := range r.ttls {
		if got != 800*time.Millisecond {
			t.Errorf("TTLs sent %v, want each 800ms", r.ttls)
			break
		}
	}
	// 400 ms left in true time is 500 ms on a clock that runs 25% fast.
	for _, h := range []keyserver.Holder{h1, h2} {
		if h.Left != 500*time.Millisecond {
			t.Errorf("holder's time left %v, want 500ms", h.Left)
		}
	}
	if h1.Rank != -1 || h2.Rank != 1 || fence != 7 || prev != 3 {
		t.Errorf("replies changed on the way: ranks %v %v, fence %d, prev %d", h1.Rank, h2.Rank, fence, prev)
	}

	// A node that keeps true time is left alone, and a bad TTL is passed
	// on for the server to refuse.
	r.ttls = nil
	Skewed(plainServer{r}, clocks, 0).Acquire(ctx, "k", "t", 1234*time.Microsecond) //nolint:errcheck
	s.Acquire(ctx, "k", "t", 0)                                                     //nolint:errcheck
	if len(r.ttls) != 1 || r.ttls[0] != 1234*time.Microsecond {
		t.Errorf("TTLs sent %v, want [1.234ms] (and the zero TTL passed on)", r.ttls)
	}
}

func TestClockRates(t *testing.T) {
	c := NewClocks(1)
	for _, tc := range []struct {
		rate     float64
		ttl, got time.Duration
	}{
		{1, time.Second, time.Second},
		{1.009, time.Second, 991 * time.Millisecond},
		{1.1, time.Second, 909 * time.Millisecond},
		{0.5, time.Second, 2 * time.Second},
		{1000, 10 * time.Millisecond, time.Millisecond}, // never under a millisecond
	} {
		c.Set(0, tc.rate)
		if got := c.toNode(0, tc.ttl); got != tc.got {
			t.Errorf("rate %v: TTL %v is sent as %v, want %v", tc.rate, tc.ttl, got, tc.got)
		}
	}
}

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

// setRecorder is a primRecorder that also takes sets of keys, as the
// Redis key server does.
type setRecorder struct{ primRecorder }

func (r setRecorder) AcquireAll(_ context.Context, keys []string, _ string, ttl time.Duration) (bool, keyserver.Holder, error) {
	r.note("AcquireAll", ttl)
	r.keys = append(r.keys, keys)
	return false, keyserver.Holder{Left: r.left, Rank: -1}, nil
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
	return false, keyserver.Holder{Left: r.left, Rank: -1}, nil
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
	if h.Left != 500*time.Millisecond || h.Rank != -1 {
		t.Errorf("holder %+v, want 500ms left and the rank as it came", h)
	}
}
