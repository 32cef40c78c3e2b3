package rueidis_test

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/goredlock/goredlock/internal/redistest"
)

// BenchmarkAcquireRelease is one lock's round trip on one loopback Redis,
// with a context that has a deadline, as the redlock client's calls do.
func BenchmarkAcquireRelease(b *testing.B) {
	node := redistest.Start(b, 1).Nodes[0]
	rdb := newClient(b, node.Addr())
	s := newServer(b, rdb)
	var n atomic.Int64
	b.RunParallel(func(pb *testing.PB) {
		key := "bench-" + strconv.FormatInt(n.Add(1), 10)
		for pb.Next() {
			ctx, cancel := context.WithTimeout(bg, time.Second)
			if ok, err := s.Acquire(ctx, key, "t", time.Minute); !ok || err != nil {
				b.Fatal(ok, err)
			}
			if ok, err := s.Release(ctx, key, "t"); !ok || err != nil {
				b.Fatal(ok, err)
			}
			cancel()
		}
	})
}
