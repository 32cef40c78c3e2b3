package redlock

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/goredlock/goredlock/internal/clock"
	"github.com/goredlock/goredlock/keyserver"
	"github.com/goredlock/goredlock/keyserver/memory"
)

// countingClock is the real clock counting its readings, Now and Since
// alike.
type countingClock struct {
	clock.Real
	reads atomic.Int64
}

func (c *countingClock) Now() time.Time { c.reads.Add(1); return c.Real.Now() }

func (c *countingClock) Since(t time.Time) time.Duration { c.reads.Add(1); return c.Real.Since(t) }

// BenchmarkClockReads reports how often the client reads its clock per
// uncontended lock and unlock on an in-memory server (clock-reads/op):
// each read costs about 100 ns on some virtual machines, as much as the
// rest of the in-process path. The server's own readings are not counted.
func BenchmarkClockReads(b *testing.B) {
	s := memory.New()
	defer s.Close()
	clk := &countingClock{}
	c, err := New([]keyserver.KeyServer{s}, withClock(clk))
	if err != nil {
		b.Fatal(err)
	}
	lockUnlock(b, c)
	b.ReportMetric(float64(clk.reads.Load())/float64(b.N), "clock-reads/op")
}
