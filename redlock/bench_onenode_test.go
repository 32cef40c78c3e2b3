//go:build unix

package redlock_test

import (
	"fmt"
	"sync/atomic"
	"testing"

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
}
