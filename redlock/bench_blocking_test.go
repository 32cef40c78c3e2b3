package redlock

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/goredlock/goredlock/keyserver"
	"github.com/goredlock/goredlock/keyserver/memory"
)

// blockingServer hides a memory server's InProcess (and its optional
// interfaces): the client calls it concurrently, each call on the blocking
// adapter, as it calls a third-party key server.
type blockingServer struct{ keyserver.KeyServer }

// BenchmarkBlockingParallel is lock+unlock from 64 goroutines, each on its
// own lock, on five
// servers that are neither in-process nor Starters: the cost of the
// blocking adapter of the fan-out, apart from any network.
func BenchmarkBlockingParallel(b *testing.B) {
	var ks []keyserver.KeyServer
	for range 5 {
		s := memory.New()
		defer s.Close()
		ks = append(ks, blockingServer{s})
	}
	c, err := New(ks)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	b.SetParallelism(32)
	b.ReportAllocs()
	b.ResetTimer()
	var next atomic.Int64
	b.RunParallel(func(pb *testing.PB) {
		ctx, name := context.Background(), fmt.Sprint("bench-", next.Add(1))
		for pb.Next() {
			l, err := c.Acquire(ctx, name, 10*time.Second)
			if err != nil {
				b.Error(err)
				return
			}
			if err := l.Release(ctx); err != nil {
				b.Error(err)
				return
			}
		}
	})
}
