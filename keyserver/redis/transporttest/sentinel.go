package transporttest

import (
	"context"
	"testing"
	"time"

	"github.com/goredlock/goredlock/internal/redistest"
)

// sentinelFailover checks that through a sentinel the server follows the
// master it elects: a lock written, and replicated, before the master died
// is still held after the failover. (A write the replica had not received
// would be lost, which is why one Sentinel deployment is one Redlock
// server, not several.)
func (s *suite) sentinelFailover(t *testing.T) {
	nodes := redistest.Start(t, 2).Nodes
	master, replica := nodes[0], nodes[1]
	replica.ReplicaOf(master)
	sentinel := redistest.StartSentinel(t, master, "locks", 300*time.Millisecond, replica)
	srv := s.server(t, Target{Addr: sentinel.Addr(), Sentinel: "locks"})
	want(t, "Acquire(a)", true)(srv.Acquire(bg, "report", "a", time.Minute))
	if got := master.MustDo("WAIT", 1, 5000); got != int64(1) {
		t.Fatalf("WAIT = %v; want the replica to have the key", got)
	}
	master.Kill()
	eventually(t, 30*time.Second, "the failover", func() bool {
		ctx, cancel := context.WithTimeout(bg, time.Second)
		defer cancel()
		ok, err := srv.Acquire(ctx, "report", "b", time.Minute)
		if ok && err == nil {
			t.Fatal("b was granted a lock a holds")
		}
		return err == nil
	})
	if got := redistest.Text(replica.MustDo("GET", "report")); got != "a" {
		t.Errorf("the promoted replica holds %q; want a's lock", got)
	}
	want(t, "Release(a)", true)(srv.Release(context.Background(), "report", "a"))
}
