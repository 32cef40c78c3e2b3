package redis_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	redigo "github.com/gomodule/redigo/redis"

	"github.com/goredlock/goredlock/internal/redistest"
	"github.com/goredlock/goredlock/keyserver/redis"
)

// BenchmarkLockUnlock is one Acquire and one Release of a free key on one
// local Redis, with the per-call deadline the redlock client sets: over
// FromURL's pipelined connection, its pooled connections, and a caller's
// own redigo pool (New), by one goroutine (the latency of a call alone)
// and by 64 (what coalescing buys under load). cpu-µs/op is the client's
// CPU time (all its threads) per lock and unlock.
func BenchmarkLockUnlock(b *testing.B) {
	node := redistest.Start(b, 1).Nodes[0]
	servers := []struct {
		name string
		open func(b *testing.B) *redis.Server
	}{
		{"pipelined", func(b *testing.B) *redis.Server { return benchServer(b, node.URL("")) }},
		{"pooled", func(b *testing.B) *redis.Server { return benchServer(b, node.URL(""), redis.WithPooledConnections()) }},
		{"callers-pool", func(b *testing.B) *redis.Server {
			pool := &redigo.Pool{MaxIdle: 64, DialContext: func(ctx context.Context) (redigo.Conn, error) {
				return redigo.DialContext(ctx, "tcp", node.Addr())
			}}
			s := redis.New(pool)
			b.Cleanup(func() { s.Close(); pool.Close() })
			return s
		}},
	}
	for _, srv := range servers {
		for _, goroutines := range []int{1, 64} {
			b.Run(fmt.Sprintf("%s/goroutines=%d", srv.name, goroutines), func(b *testing.B) {
				s := srv.open(b)
				var next atomic.Int64
				b.SetParallelism(max(1, goroutines/2)) // × GOMAXPROCS 2
				if goroutines == 1 {
					b.SetParallelism(1)
				}
				b.ReportAllocs()
				b.ResetTimer()
				cpu := cpuTime()
				defer func() { b.ReportMetric(float64((cpuTime()-cpu).Microseconds())/float64(b.N), "cpu-µs/op") }()
				run := func(key string, n func() bool) {
					for n() {
						ctx, cancel := context.WithTimeout(context.Background(), time.Second)
						ok, err := s.Acquire(ctx, key, "token", 10*time.Second)
						if err == nil && ok {
							ok, err = s.Release(ctx, key, "token")
						}
						cancel()
						if err != nil || !ok {
							b.Errorf("lock+unlock of %s: %v, %v", key, ok, err)
							return
						}
					}
				}
				if goroutines == 1 {
					i := 0
					run("bench", func() bool { i++; return i <= b.N })
					return
				}
				b.RunParallel(func(pb *testing.PB) { run(fmt.Sprint("bench-", next.Add(1)), pb.Next) })
			})
		}
	}
}

func benchServer(b *testing.B, url string, opts ...redis.Option) *redis.Server {
	b.Helper()
	s, err := redis.FromURL(url, opts...)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	return s
}
