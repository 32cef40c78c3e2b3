package redlock_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/goredlock/goredlock/internal/redistest"
)

// BenchmarkRedisParallelSet is BenchmarkRedisParallel for sets: 64
// goroutines each take and release a set of 4 names of its own on five
// local nodes with AcquireAll, so that its cost compares with a lock's.
func BenchmarkRedisParallelSet(b *testing.B) {
	c := clientOn(b, redistest.Start(b, 5))
	var next atomic.Int64
	b.SetParallelism(32) // × GOMAXPROCS 2 = 64 goroutines
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		g := next.Add(1)
		names := []string{fmt.Sprint("set-", g, "-a"), fmt.Sprint("set-", g, "-b"), fmt.Sprint("set-", g, "-c"), fmt.Sprint("set-", g, "-d")}
		ctx := context.Background()
		for pb.Next() {
			l, err := c.AcquireAll(ctx, names, 10*time.Second)
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
