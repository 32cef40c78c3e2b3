package redlock

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/goredlock/goredlock/keyserver"
	"github.com/goredlock/goredlock/keyserver/memory"
)

// BenchmarkAcquireRelease measures one uncontended lock and unlock through
// the client on in-memory servers: the cost the client itself adds.
func BenchmarkAcquireRelease(b *testing.B) {
	for _, n := range []int{1, 3, 5} {
		b.Run(fmt.Sprintf("servers=%d", n), func(b *testing.B) {
			var ks []keyserver.KeyServer
			for i := 0; i < n; i++ {
				s := memory.New()
				defer s.Close()
				ks = append(ks, s)
			}
			c, err := New(ks)
			if err != nil {
				b.Fatal(err)
			}
			lockUnlock(b, c)
		})
	}
}

// lockUnlock takes and releases one lock b.N times on c, timed, and waits
// for what the releases left running.
func lockUnlock(b *testing.B, c *Client) {
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		l, err := c.Acquire(ctx, "bench", 10*time.Second)
		if err != nil {
			b.Fatal(err)
		}
		if err := l.Release(ctx); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	c.bg.Wait()
}
