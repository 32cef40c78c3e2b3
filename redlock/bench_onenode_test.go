//go:build unix

package redlock_test

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/goredlock/goredlock/internal/redistest"
)

// BenchmarkRedisOneNode is what most deployments run: a Client over one
// local Redis (FromURL), taking and releasing locks by one goroutine, the
// latency of a caller alone (p50-µs, of Acquire, as bench measures it),
// and by 64 on names of their own, what the client sustains under load.
// cpu-µs/op is this process's CPU time per lock and unlock.
func BenchmarkRedisOneNode(b *testing.B) {
	cluster := redistest.Start(b, 1)
	for _, goroutines := range []int{1, 64} {
		b.Run(fmt.Sprintf("goroutines=%d", goroutines), func(b *testing.B) {
			c := clientOn(b, cluster)
			ctx := context.Background()
			var next atomic.Int64
			b.ReportAllocs()
			cpu := cpuTime()
			b.ResetTimer()
			if goroutines == 1 {
				took := make([]time.Duration, 0, b.N)
				for i := 0; i < b.N; i++ {
					start := time.Now()
					l, err := c.Acquire(ctx, "bench", 10*time.Second)
					took = append(took, time.Since(start))
					if err != nil {
						b.Fatal(err)
					}
					if err := l.Release(ctx); err != nil {
						b.Fatal(err)
					}
				}
				b.StopTimer()
				slices.Sort(took)
				b.ReportMetric(float64(took[len(took)/2].Nanoseconds())/1e3, "p50-µs")
			} else {
				b.SetParallelism(goroutines / 2) // × GOMAXPROCS 2
				b.RunParallel(func(pb *testing.PB) {
					name := fmt.Sprint("bench-", next.Add(1))
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
				b.StopTimer()
			}
			b.ReportMetric(float64((cpuTime()-cpu).Microseconds())/float64(b.N), "cpu-µs/op")
		})
	}
}
