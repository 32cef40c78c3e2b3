package redis_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	redigo "github.com/gomodule/redigo/redis"

	"github.com/goredlock/goredlock/internal/redistest"
	"github.com/goredlock/goredlock/keyserver"
	"github.com/goredlock/goredlock/keyserver/redis"
	"github.com/goredlock/goredlock/redlock"
)

// BenchmarkRedlockOverPools is a redlock client taking and releasing
// locks on distinct names from 64 goroutines on five local nodes, its key
// servers made by New over a caller's redigo pool per node (64 connections,
// all kept idle, as the bench command gives redsync), and, to compare, by
// FromURL. cpu-µs/op is the client's CPU time per lock and unlock.
func BenchmarkRedlockOverPools(b *testing.B) {
	cluster := redistest.Start(b, 5)
	servers := []struct {
		name string
		open func(b *testing.B, addr string) *redis.Server
	}{
		{"new-pool", func(b *testing.B, addr string) *redis.Server {
			return poolServer(b, addr)
		}},
		{"new-pool-per-call", func(b *testing.B, addr string) *redis.Server {
			return poolServer(b, addr, redis.WithPooledConnections())
		}},
		{"fromurl", func(b *testing.B, addr string) *redis.Server {
			return benchServer(b, "redis://"+addr)
		}},
	}
	for _, srv := range servers {
		b.Run(srv.name, func(b *testing.B) {
			var ks []keyserver.KeyServer
			for _, n := range cluster.Nodes {
				ks = append(ks, srv.open(b, n.Addr()))
			}
			c, err := redlock.New(ks)
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { c.Close() })
			var next atomic.Int64
			b.SetParallelism(32) // × GOMAXPROCS 2 = 64 goroutines
			b.ReportAllocs()
			b.ResetTimer()
			cpu := cpuTime()
			defer func() { b.ReportMetric(float64((cpuTime()-cpu).Microseconds())/float64(b.N), "cpu-µs/op") }()
			b.RunParallel(func(pb *testing.PB) {
				name := fmt.Sprint("bench-", next.Add(1))
				ctx := context.Background()
				for pb.Next() {
					l, err := c.Acquire(ctx, name, 10*time.Second)
					if err == nil {
						err = l.Release(ctx)
					}
					if err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}

// poolServer is New over a redigo pool of 64 connections to addr, closed
// with the benchmark.
func poolServer(b *testing.B, addr string, opts ...redis.Option) *redis.Server {
	pool := &redigo.Pool{MaxIdle: 64, MaxActive: 64, Wait: true, DialContext: func(ctx context.Context) (redigo.Conn, error) {
		return redigo.DialContext(ctx, "tcp", addr)
	}}
	s := redis.New(pool, opts...)
	b.Cleanup(func() { s.Close(); pool.Close() })
	return s
}
