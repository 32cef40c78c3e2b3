//go:build unix

package redlock_test

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	redigo "github.com/gomodule/redigo/redis"

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
			cpu := cpuTime()
			if goroutines == 1 {
				b.ReportAllocs()
				lockUnlockTimed(b, c)
			} else {
				var next atomic.Int64
				lockUnlockParallel(b, c, func() string { return fmt.Sprint("bench-", next.Add(1)) })
				b.StopTimer()
			}
			b.ReportMetric(float64((cpuTime()-cpu).Microseconds())/float64(b.N), "cpu-µs/op")
		})
	}
	// The floor beside it, as bench's: SET NX PX and an owner-checked DEL
	// script over a redigo pool, nothing else; what a lone caller's lock
	// and unlock cannot cost less than.
	b.Run("floor", func(b *testing.B) {
		pool := &redigo.Pool{MaxIdle: 4, DialContext: func(ctx context.Context) (redigo.Conn, error) {
			return redigo.DialContext(ctx, "tcp", cluster.Nodes[0].Addr())
		}}
		defer pool.Close()
		del := redigo.NewScript(1, `if redis.call("GET", KEYS[1]) == ARGV[1] then return redis.call("DEL", KEYS[1]) end return 0`)
		cpu := cpuTime()
		took := make([]time.Duration, 0, b.N)
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			start := time.Now()
			c := pool.Get()
			ok, err := redigo.String(c.Do("SET", "floor", "token", "NX", "PX", 10000))
			took = append(took, time.Since(start))
			if err != nil || ok != "OK" {
				b.Fatal(ok, err)
			}
			if n, err := redigo.Int(del.Do(c, "floor", "token")); err != nil || n != 1 {
				b.Fatal(n, err)
			}
			c.Close()
		}
		b.StopTimer()
		slices.Sort(took)
		b.ReportMetric(float64(took[len(took)/2].Nanoseconds())/1e3, "p50-µs")
		b.ReportMetric(float64((cpuTime()-cpu).Microseconds())/float64(b.N), "cpu-µs/op")
	})
}
