//go:build unix

package redlock_test

import (
	"syscall"
	"testing"
	"time"
)

// BenchmarkRedisParallelCPU is BenchmarkRedisParallel that also reports
// the client's CPU time per lock and unlock (cpu-µs/op): this process's
// user and system time, apart from the Redis nodes'. It includes the few
// milliseconds of starting the nodes, the same for every build compared.
func BenchmarkRedisParallelCPU(b *testing.B) {
	cpu := cpuTime()
	BenchmarkRedisParallel(b)
	b.ReportMetric(float64((cpuTime()-cpu).Microseconds())/float64(b.N), "cpu-µs/op")
}

// BenchmarkRedisParallelSetCPU is BenchmarkRedisParallelSet with the
// client's CPU time per set taken and released, as above.
func BenchmarkRedisParallelSetCPU(b *testing.B) {
	cpu := cpuTime()
	BenchmarkRedisParallelSet(b)
	b.ReportMetric(float64((cpuTime()-cpu).Microseconds())/float64(b.N), "cpu-µs/op")
}

// cpuTime is the CPU time this process has used, user and system.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
