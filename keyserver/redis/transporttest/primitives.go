package transporttest

import (
	"testing"

	"github.com/goredlock/goredlock/keyserver"
)

// primitiveCommandCounts pins what a permit, a read hold and a write hold
// cost Redis when nobody contends: at most twice a lock's four commands,
// so that a primitive is not the expensive way to hold something.
func (s *suite) primitiveCommandCounts(t *testing.T) {
	n := node(t)
	srv := s.server(t, Target{Addr: n.Addr()})
	c := counter{t, n}
	sem, rw := keyserver.SemaphoreKey("counted"), keyserver.RWKey("counted")
	tok := ranked(1, 1)
	steps := []struct {
		name string
		run  func()
	}{
		{"permit of 1", func() {
			ok, _, err := srv.AcquirePermit(bg, sem, 1, 0, tok, ttl)
			want(t, "AcquirePermit", true)(ok, err)
			want(t, "ReleasePermit", true)(srv.ReleasePermit(bg, sem, 0, tok))
		}},
		{"permit of 3", func() {
			ok, _, err := srv.AcquirePermit(bg, sem, 3, 2, tok, ttl)
			want(t, "AcquirePermit", true)(ok, err)
			want(t, "ReleasePermit", true)(srv.ReleasePermit(bg, sem, 2, tok))
		}},
		{"read hold", func() {
			ok, _, err := srv.AcquireRead(bg, rw, tok, ttl)
			want(t, "AcquireRead", true)(ok, err)
			want(t, "ReleaseHold(read)", true)(srv.ReleaseHold(bg, rw, tok, false))
		}},
		{"write hold", func() {
			ok, _, err := srv.AcquireWrite(bg, rw, tok, ttl, true)
			want(t, "AcquireWrite", true)(ok, err)
			want(t, "ReleaseHold(write)", true)(srv.ReleaseHold(bg, rw, tok, true))
		}},
	}
	for _, st := range steps {
		st.run() // the first runs load the scripts and open connections
		st.run()
		c.reset()
		st.run()
		calls := c.calls()
		got := 0
		for _, k := range calls {
			got += k
		}
		t.Logf("uncontended %s, taken and released: %d commands", st.name, got)
		if got > 8 {
			t.Errorf("uncontended %s, taken and released, took %d commands %v; want at most 8, twice a lock's", st.name, got, calls)
		}
	}
}
