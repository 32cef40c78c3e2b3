package chaos

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/goredlock/goredlock/keyserver"
)

// primRecorder is a recorder that also keeps semaphores, read-write locks
// and elections, as the Redis key server does.
type primRecorder struct{ *recorder }

func (r primRecorder) AcquirePermit(_ context.Context, _ string, _, _ int, _ string, ttl time.Duration) (bool, keyserver.Permits, error) {
	r.note("AcquirePermit", ttl)
	return false, keyserver.Permits{Free: []int{2}, Left: r.left}, nil
}

func (r primRecorder) ExtendPermit(_ context.Context, _ string, _ int, _ string, ttl time.Duration) (bool, error) {
	r.note("ExtendPermit", ttl)
	return true, nil
}

func (r primRecorder) ReleasePermit(context.Context, string, int, string) (bool, error) {
	r.note("ReleasePermit", 0)
	return true, nil
}

func (r primRecorder) WatchPermits(context.Context, string, string) (<-chan struct{}, func(), error) {
	r.note("WatchPermits", 0)
	return nil, func() {}, nil
}

func (r primRecorder) AcquireRead(_ context.Context, _, _ string, ttl time.Duration) (bool, keyserver.Holder, error) {
	r.note("AcquireRead", ttl)
	return false, keyserver.Holder{Left: r.left}, nil
}

func (r primRecorder) AcquireWrite(_ context.Context, _, _ string, ttl time.Duration, _ bool) (bool, keyserver.Holder, error) {
	r.note("AcquireWrite", ttl)
	return false, keyserver.Holder{Left: r.left}, nil
}

func (r primRecorder) ExtendHold(_ context.Context, _, _ string, ttl time.Duration, _ bool) (bool, error) {
	r.note("ExtendHold", ttl)
	return true, nil
}

func (r primRecorder) ReleaseHold(context.Context, string, string, bool) (bool, error) {
	r.note("ReleaseHold", 0)
	return true, nil
}

func (r primRecorder) WatchHolds(context.Context, string, string, bool) (<-chan struct{}, func(), error) {
	r.note("WatchHolds", 0)
	return nil, func() {}, nil
}

func (r primRecorder) AcquireLeader(_ context.Context, _, _, _ string, ttl time.Duration) (bool, uint64, error) {
	r.note("AcquireLeader", ttl)
	return true, 11, nil
}

func (r primRecorder) ExtendLeader(_ context.Context, _, _, _ string, ttl time.Duration) (bool, error) {
	r.note("ExtendLeader", ttl)
	return true, nil
}

func (r primRecorder) ReleaseLeader(context.Context, string, string) (bool, error) {
	r.note("ReleaseLeader", 0)
	return true, nil
}

func (r primRecorder) ReadLeader(context.Context, string) (keyserver.Leadership, error) {
	r.note("ReadLeader", 0)
	return keyserver.Leadership{Token: "t", Value: "v", Left: r.left}, nil
}

func (r primRecorder) WatchLeader(context.Context, string) (<-chan struct{}, func(), error) {
	r.note("WatchLeader", 0)
	return nil, func() {}, nil
}

func TestSkewedKeepsThePrimitivesOfTheServer(t *testing.T) {
	clocks := NewClocks(1)
	isPrims := func(ks keyserver.KeyServer) (sem, rw, el bool) {
		_, sem = ks.(keyserver.Semaphorer)
		_, rw = ks.(keyserver.RWLocker)
		_, el = ks.(keyserver.Elector)
		return sem, rw, el
	}
	r := &recorder{}
	if sem, rw, el := isPrims(Skewed(bothServer{r}, clocks, 0)); sem || rw || el {
		t.Errorf("Skewed of a server without primitives has them: semaphore %v, rw %v, election %v", sem, rw, el)
	}
	s := Skewed(primRecorder{r}, clocks, 0)
	if sem, rw, el := isPrims(s); !sem || !rw || !el {
		t.Errorf("Skewed of a server with every primitive lacks some: semaphore %v, rw %v, election %v", sem, rw, el)
	}
	if _, ok := s.(keyserver.Notifier); !ok {
		t.Error("Skewed with primitives is no Notifier")
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
	s := Skewed(primRecorder{r}, clocks, 0)
	sem, rw, el := s.(keyserver.Semaphorer), s.(keyserver.RWLocker), s.(keyserver.Elector)

	const ttl = time.Second
	_, p, _ := sem.AcquirePermit(ctx, "k", 3, 0, "t", ttl)
	sem.ExtendPermit(ctx, "k", 0, "t", ttl) //nolint:errcheck // recorded
	sem.ReleasePermit(ctx, "k", 0, "t")     //nolint:errcheck
	_, stop, _ := sem.WatchPermits(ctx, "k", "t")
	stop()
	_, hr, _ := rw.AcquireRead(ctx, "k", "t", ttl)
	_, hw, _ := rw.AcquireWrite(ctx, "k", "t", ttl, true)
	rw.ExtendHold(ctx, "k", "t", ttl, false) //nolint:errcheck
	rw.ReleaseHold(ctx, "k", "t", true)      //nolint:errcheck
	_, stop, _ = rw.WatchHolds(ctx, "k", "t", true)
	stop()
	_, term, _ := el.AcquireLeader(ctx, "k", "t", "v", ttl)
	el.ExtendLeader(ctx, "k", "t", "v", ttl) //nolint:errcheck
	el.ReleaseLeader(ctx, "k", "t")          //nolint:errcheck
	ld, _ := el.ReadLeader(ctx, "k")
	_, stop, _ = el.WatchLeader(ctx, "k")
	stop()

	want := []string{"AcquirePermit", "ExtendPermit", "ReleasePermit", "WatchPermits",
		"AcquireRead", "AcquireWrite", "ExtendHold", "ReleaseHold", "WatchHolds",
		"AcquireLeader", "ExtendLeader", "ReleaseLeader", "ReadLeader", "WatchLeader"}
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
	if !slices.Equal(p.Free, []int{2}) || term != 11 || ld.Value != "v" || ld.Token != "t" {
		t.Errorf("replies changed on the way: free %v, term %d, leader %+v", p.Free, term, ld)
	}
}
