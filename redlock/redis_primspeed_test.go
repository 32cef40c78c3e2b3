package redlock_test

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/goredlock/goredlock/internal/redistest"
	"github.com/goredlock/goredlock/redlock"
)

// TestRedisContendedPrimitivesProfile is a diagnosis, not a check: the
// bench's 8c-64-one-key workload (64 goroutines over 8 clients on one
// name, 5 nodes) for a lock, a permit of Semaphore(name, 1) and a write
// hold, with every attempt of every call traced through the hooks: how
// many attempts a grant takes, how the attempts' votes split, and how
// long a call waits between them. Run it with PRIMSPEED=1 (and -v).
func TestRedisContendedPrimitivesProfile(t *testing.T) {
	if os.Getenv("PRIMSPEED") == "" {
		t.Skip("a diagnosis: set PRIMSPEED=1 to run it")
	}
	cluster := redistest.Start(t, 5)
	kinds := []string{"lock", "permit", "write"}
	if k := os.Getenv("PRIMSPEED_KINDS"); k != "" {
		kinds = strings.Split(k, ",")
	}
	for _, kind := range kinds {
		t.Run(kind, func(t *testing.T) { profileContended(t, cluster, kind) })
	}
}

type attemptTrace struct {
	at               time.Time
	granted, refused int
	failed           int
	ok               bool
	dur              time.Duration
}

type callTrace struct {
	mu       sync.Mutex
	start    time.Time
	attempts []attemptTrace
	end      time.Time
	err      error
}

type traceKey struct{}

func profileContended(t *testing.T, cluster *redistest.Cluster, kind string) {
	var (
		mu    sync.Mutex
		calls []*callTrace
	)
	hooks := redlock.Hooks{
		Start: func(ctx context.Context, op, name string) context.Context {
			ct := &callTrace{start: time.Now()}
			mu.Lock()
			calls = append(calls, ct)
			mu.Unlock()
			return context.WithValue(ctx, traceKey{}, ct)
		},
		Attempt: func(ctx context.Context, a redlock.Attempt) {
			if ct, ok := ctx.Value(traceKey{}).(*callTrace); ok {
				ct.mu.Lock()
				ct.attempts = append(ct.attempts, attemptTrace{at: time.Now(), granted: a.Granted, refused: a.Refused, failed: a.Failed, ok: a.OK, dur: a.Duration})
				ct.mu.Unlock()
			}
		},
		End: func(ctx context.Context, op, name string, err error) {
			if ct, ok := ctx.Value(traceKey{}).(*callTrace); ok {
				ct.mu.Lock()
				ct.end, ct.err = time.Now(), err
				ct.mu.Unlock()
			}
		},
	}
	var clients []*redlock.Client
	for range 8 {
		clients = append(clients, clientOn(t, cluster, redlock.WithHooks(hooks)))
	}
	name := "primspeed-" + kind
	take := func(c *redlock.Client, ctx context.Context) (*redlock.Lock, error) {
		switch kind {
		case "permit":
			return c.Semaphore(name, 1).Acquire(ctx, 10*time.Second)
		case "write":
			return c.RWMutex(name).Lock(ctx, 10*time.Second)
		}
		return c.Acquire(ctx, name, 10*time.Second)
	}
	d := 2 * time.Second
	if s := os.Getenv("PRIMSPEED_DURATION"); s != "" {
		var err error
		d, err = time.ParseDuration(s)
		require.NoError(t, err)
	}
	ctx := context.Background()
	var grants, gaveUp atomic.Int64
	stop := time.Now().Add(d)
	var wg sync.WaitGroup
	for g := range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := clients[g%8]
			for time.Now().Before(stop) {
				l, err := take(c, ctx)
				if err != nil {
					gaveUp.Add(1)
					continue
				}
				grants.Add(1)
				l.Release(ctx) //nolint:errcheck
			}
		}()
	}
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	// Summaries over the granted calls.
	var lat []time.Duration
	hist := map[string]int{}
	attempts, refusedAttempts, splitAttempts, noneAttempts := 0, 0, 0, 0
	var gapSplit, gapRefused, firstWait []time.Duration
	perCall := map[int]int{}
	for _, ct := range calls {
		if ct.err != nil || ct.end.IsZero() {
			continue
		}
		lat = append(lat, ct.end.Sub(ct.start))
		perCall[len(ct.attempts)]++
		for i, a := range ct.attempts {
			attempts++
			hist[fmt.Sprintf("g%d/r%d/f%d", a.granted, a.refused, a.failed)]++
			if !a.ok {
				refusedAttempts++
				if a.granted > 0 {
					splitAttempts++
				} else {
					noneAttempts++
				}
				if i+1 < len(ct.attempts) {
					gap := ct.attempts[i+1].at.Sub(a.at) - ct.attempts[i+1].dur
					if a.granted > 0 {
						gapSplit = append(gapSplit, gap)
					} else {
						gapRefused = append(gapRefused, gap)
					}
				}
			}
		}
		if len(ct.attempts) > 0 {
			firstWait = append(firstWait, ct.attempts[0].at.Sub(ct.start)-ct.attempts[0].dur)
		}
	}
	pct := func(ds []time.Duration, p int) time.Duration {
		if len(ds) == 0 {
			return 0
		}
		sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
		return ds[(len(ds)-1)*p/100]
	}
	n := float64(grants.Load())
	t.Logf("%s: %d grants in %v (%.0f/s), gave up %d; latency p50 %v p99 %v", kind, grants.Load(), d, n/d.Seconds(), gaveUp.Load(), pct(lat, 50), pct(lat, 99))
	t.Logf("%s: attempts/grant %.2f; refused %.2f/grant (split: some servers granted %.2f, none granted %.2f)",
		kind, float64(attempts)/n, float64(refusedAttempts)/n, float64(splitAttempts)/n, float64(noneAttempts)/n)
	t.Logf("%s: wait before first attempt (in-process queue): p50 %v p90 %v p99 %v", kind, pct(firstWait, 50), pct(firstWait, 90), pct(firstWait, 99))
	t.Logf("%s: gap after split attempt: n %d p50 %v p90 %v p99 %v", kind, len(gapSplit), pct(gapSplit, 50), pct(gapSplit, 90), pct(gapSplit, 99))
	t.Logf("%s: gap after refused attempt: n %d p50 %v p90 %v p99 %v", kind, len(gapRefused), pct(gapRefused, 50), pct(gapRefused, 90), pct(gapRefused, 99))
	keys := make([]string, 0, len(hist))
	for k := range hist {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return hist[keys[i]] > hist[keys[j]] })
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, " %s:%.2f", k, float64(hist[k])/n)
	}
	t.Logf("%s: votes per grant:%s", kind, b.String())
	var pc []int
	for k := range perCall {
		pc = append(pc, k)
	}
	sort.Ints(pc)
	b.Reset()
	for _, k := range pc {
		fmt.Fprintf(&b, " %d:%d", k, perCall[k])
	}
	t.Logf("%s: calls by attempts:%s", kind, b.String())
}
