package redis_test

import (
	"fmt"
	"runtime"
	"slices"
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

// BenchmarkReleaseToWake measures, on one local node, the time from a
// holder's Release to the wake of a waiter of another Server watching the
// key; one op is one Acquire, Watch, Release and wake. The median and p99
// of release → wake are reported beside ns/op.
func BenchmarkReleaseToWake(b *testing.B) {
	node := redistest.Start(b, 1).Nodes[0]
	holder, err := redis.FromURL(node.URL(""))
	if err != nil {
		b.Fatal(err)
	}
	defer holder.Close()
	waiter, err := redis.FromURL(node.URL(""))
	if err != nil {
		b.Fatal(err)
	}
	defer waiter.Close()
	took := make([]time.Duration, 0, b.N)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if ok, err := holder.Acquire(bg, "bench", "h", 10*time.Second); err != nil || !ok {
			b.Fatalf("acquire: %v, %v", ok, err)
		}
		released, stop, err := waiter.Watch(bg, "bench")
		if err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		if ok, err := holder.Release(bg, "bench", "h"); err != nil || !ok {
			b.Fatalf("release: %v, %v", ok, err)
		}
		<-released
		took = append(took, time.Since(start))
		stop()
	}
	b.StopTimer()
	slices.Sort(took)
	b.ReportMetric(float64(took[len(took)/2].Microseconds()), "µs-p50-wake")
	b.ReportMetric(float64(took[len(took)*99/100].Microseconds()), "µs-p99-wake")
}

// BenchmarkWatchSubscribed is the cost of a Watch and its stop on a key
// that another waiter of the process keeps subscribed: no round trip, with
// 1 and 64 goroutines.
func BenchmarkWatchSubscribed(b *testing.B) {
	node := redistest.Start(b, 1).Nodes[0]
	s, err := redis.FromURL(node.URL(""))
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	_, keep, err := s.Watch(bg, "bench")
	if err != nil {
		b.Fatal(err)
	}
	defer keep()
	for _, goroutines := range []int{1, 64} {
		b.Run(fmt.Sprintf("goroutines=%d", goroutines), func(b *testing.B) {
			b.ReportAllocs()
			b.SetParallelism((goroutines + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					_, stop, err := s.Watch(bg, "bench")
					if err != nil {
						b.Error(err)
						return
					}
					stop()
				}
			})
		})
	}
}
