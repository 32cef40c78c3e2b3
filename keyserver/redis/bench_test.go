package redis_test

import (
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/goredlock/goredlock/internal/redistest"
	"github.com/goredlock/goredlock/keyserver/redis"
)

// BenchmarkAcquireRelease compares the pipelined and the pooled mode on
// one local Redis node: one op is an Acquire and a Release of a key of the
// goroutine's own, with 1 and 64 goroutines. Both modes dial the same URL
// with the same options. ops/s is reported beside ns/op, since with 64
// goroutines ns/op is wall time divided among them.
func BenchmarkAcquireRelease(b *testing.B) {
	node := redistest.Start(b, 1).Nodes[0]
	for _, mode := range []struct {
		name string
		opts []redis.Option
	}{
		{"pipelined", nil},
		{"pooled", []redis.Option{redis.WithPooledConnections()}},
	} {
		for _, goroutines := range []int{1, 64} {
			b.Run(fmt.Sprintf("%s/goroutines=%d", mode.name, goroutines), func(b *testing.B) {
				s, err := redis.FromURL(node.URL(""), mode.opts...)
				if err != nil {
					b.Fatal(err)
				}
				defer s.Close()
				var ids atomic.Int64
				op := func(key string) {
					if ok, err := s.Acquire(bg, key, "token", 10*time.Second); err != nil || !ok {
						b.Errorf("acquire %s: %v, %v", key, ok, err)
					}
					if ok, err := s.Release(bg, key, "token"); err != nil || !ok {
						b.Errorf("release %s: %v, %v", key, ok, err)
					}
				}
				op("warm") // the connection is opened outside the timing
				b.ReportAllocs()
				b.ResetTimer()
				if goroutines == 1 {
					for i := 0; i < b.N; i++ {
						op("bench")
					}
				} else {
					b.SetParallelism((goroutines + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
					b.RunParallel(func(pb *testing.PB) {
						key := fmt.Sprint("bench/", ids.Add(1))
						for pb.Next() {
							op(key)
						}
					})
				}
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "ops/s")
			})
		}
	}
}
