package redlock_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/goredlock/goredlock/keyserver"
	"github.com/goredlock/goredlock/keyserver/memory"
	"github.com/goredlock/goredlock/redlock"
)

// blockingServer hides a memory server's InProcess (and its optional
// interfaces): the client calls it concurrently, each call on the blocking
// adapter, as it calls a third-party key server.
type blockingServer struct{ keyserver.KeyServer }

// BenchmarkBlockingParallel is lock+unlock from 64 goroutines, each on its
// own lock, on five servers that are neither in-process nor Starters: the
// cost of the fan-out's blocking adapter, apart from any network.
func BenchmarkBlockingParallel(b *testing.B) {
	var ks []keyserver.KeyServer
	for range 5 {
		s := memory.New()
		defer s.Close()
		ks = append(ks, blockingServer{s})
	}
	c, err := redlock.New(ks)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	var next atomic.Int64
	holdParallel(b, func() func(context.Context) (*redlock.Lock, error) {
		name := fmt.Sprint("bench-", next.Add(1))
		return func(ctx context.Context) (*redlock.Lock, error) {
			return c.Acquire(ctx, name, 10*time.Second)
		}
	})
}
