package transporttest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/goredlock/goredlock/internal/redistest"
	"github.com/goredlock/goredlock/keyserver"
	"github.com/goredlock/goredlock/redlock"
)

// redlockOverThreeNodes runs the redlock client on three nodes through the
// transport: a lock is held on all three and excludes a second taker, a
// paused minority is outvoted, and a paused majority costs each attempt
// about one server timeout, not the client's own read timeout: the call
// fails within its patience (about a second, see redlock), not seconds
// more.
func (s *suite) redlockOverThreeNodes(t *testing.T) {
	nodes := redistest.Start(t, 3).Nodes
	var servers []keyserver.KeyServer
	for _, n := range nodes {
		servers = append(servers, s.server(t, Target{Addr: n.Addr()}))
	}
	client, err := redlock.New(servers, redlock.WithRetryCount(0))
	must(t, "redlock.New", err)
	defer client.Close()
	holders := func(nodes []*redistest.Node, value string) func() bool {
		return func() bool {
			for _, n := range nodes {
				if v, _ := n.Do("GET", "report"); redistest.Text(v) != value && !(v == nil && value == "") {
					return false
				}
			}
			return true
		}
	}

	lock, err := client.Acquire(bg, "report", 10*time.Second)
	must(t, "Acquire", err)
	eventually(t, time.Second, "the lock on all three nodes", holders(nodes, lock.Token()))
	if _, err := client.TryAcquire(bg, "report", 10*time.Second); !errors.Is(err, redlock.ErrNotAcquired) {
		t.Fatalf("a second TryAcquire = %v; want ErrNotAcquired", err)
	}
	must(t, "Release", lock.Release(bg))
	eventually(t, time.Second, "the lock gone from all three nodes", holders(nodes, ""))

	nodes[2].Pause()
	defer nodes[2].Resume()
	// Another name: the refused TryAcquire's call to the third node may
	// still be on its way (it returned at two refusals), and a grant it
	// gets there once "report" is free holds it until the undo.
	lock, err = client.Acquire(bg, "report-minority", 10*time.Second)
	must(t, "Acquire with a paused minority", err)
	must(t, "Release", lock.Release(bg))

	nodes[1].Pause()
	defer nodes[1].Resume()
	start := time.Now()
	if _, err := client.TryAcquire(bg, "report", 2*time.Second); !errors.Is(err, redlock.ErrNotAcquired) {
		t.Fatalf("TryAcquire with a paused majority = %v; want ErrNotAcquired", err)
	}
	if took := time.Since(start); took > 2500*time.Millisecond {
		t.Errorf("TryAcquire on a paused majority took %v; want its patience, about a second", took)
	}
}

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
	// Seen on the replica itself: a WAIT would wait only for the writes of
	// its own connection, which has none (redistest dials anew for each
	// command), and under load the master died before the key reached
	// the replica, which was then promoted without it and granted b.
	eventually(t, 10*time.Second, "a's key on the replica", func() bool {
		v, err := replica.Do("GET", "report")
		return err == nil && v != nil && redistest.Text(v) == "a"
	})
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
