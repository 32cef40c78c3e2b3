package redlock_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/goredlock/goredlock/internal/redistest"
	"github.com/goredlock/goredlock/redlock"
)

// BenchmarkRedisParallelSet is BenchmarkRedisParallel for sets: 64
// goroutines each take and release a set of 4 names of its own on five
// local nodes with AcquireAll, so that its cost compares with a lock's.
func BenchmarkRedisParallelSet(b *testing.B) {
	c := clientOn(b, redistest.Start(b, 5))
	var next atomic.Int64
	holdParallel(b, func() func(context.Context) (*redlock.Lock, error) {
		g := next.Add(1)
		names := []string{fmt.Sprint("set-", g, "-a"), fmt.Sprint("set-", g, "-b"), fmt.Sprint("set-", g, "-c"), fmt.Sprint("set-", g, "-d")}
		return func(ctx context.Context) (*redlock.Lock, error) { return c.AcquireAll(ctx, names, 10*time.Second) }
	})
}
