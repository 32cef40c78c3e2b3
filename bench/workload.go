package main

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// workload is what the goroutines of one case do: take a lock, hold it,
// release it, again, until the case's time is up.
type workload struct {
	name       string // for -workloads
	title      string
	goroutines int
	oneKey     bool          // all goroutines on one key; else one key each
	hold       time.Duration // time between grant and release
	// clients is how many independent clients (processes, in effect) the
	// goroutines are dealt over; 0 until -clients fills it in. The
	// workloads named after their clients set it themselves, so that the
	// default run has the multi-process figures beside the one-client ones.
	clients int
}

func (w workload) contended() bool { return w.oneKey && w.goroutines > 1 }

// uncontended says that w is the baseline the contended cases' Redis
// commands per grant are compared with.
func (w workload) uncontended() bool { return w.goroutines == 1 }

// lockers is how many clients a case of w opens: no more than it has
// goroutines, since a client without one would measure nothing.
func (w workload) lockers() int { return max(1, min(w.clients, w.goroutines)) }

func workloads() []workload {
	return []workload{
		{name: "1-distinct", title: "1 goroutine, no contention", goroutines: 1},
		{name: "64-distinct", title: "64 goroutines, each on its own key", goroutines: 64},
		{name: "8-one-key-hold", title: "8 goroutines on one key, holding it 1 ms", goroutines: 8, oneKey: true, hold: time.Millisecond},
		{name: "64-one-key", title: "64 goroutines on one key, no hold", goroutines: 64, oneKey: true},
		{name: "8c-one-key-hold", title: "8 clients on one key, 1 goroutine each, holding it 1 ms", goroutines: 8, oneKey: true, hold: time.Millisecond, clients: 8},
		{name: "8c-64-one-key", title: "64 goroutines dealt over 8 clients on one key, no hold", goroutines: 64, oneKey: true, clients: 8},
	}
}

// withClients gives the workloads that do not set their own client count
// n clients, and says so in their titles; their names stay, so that
// -workloads means the same with any -clients.
func withClients(ws []workload, n int) []workload {
	out := make([]workload, len(ws))
	for i, w := range ws {
		if w.clients == 0 {
			w.clients = n
			if w.lockers() > 1 {
				w.title = fmt.Sprintf("%s, dealt over %d clients", w.title, w.lockers())
			}
		}
		out[i] = w
	}
	return out
}

// timing is how long a case runs.
type timing struct {
	warmup, duration time.Duration
}

// sample is what one run of one case measured.
type sample struct {
	grants     int64
	opsPerSec  float64
	lat        latencies
	jain       float64
	overlaps   int64
	cpuPerOp   time.Duration
	cmdsPerOp  float64
	gaveUp     int64 // lock calls that returned an error (the library gave up)
	unlockErrs int64
	conns      int64 // connections the nodes accepted in the window
	firstErr   string
}

// worker is one goroutine's record; only it writes it, the case reads it
// after waiting for it.
type worker struct {
	grants     int64
	lats       []time.Duration
	gaveUp     int64
	unlockErrs int64
	firstErr   error
}

// runCase drives workload w through fresh lockers of p (w.lockers() of
// them, independent, the goroutines dealt over them) for t.warmup, then
// measures for t.duration. Cases run one at a time, so that the process's
// CPU time and the nodes' command counters belong to this case alone.
func runCase(ctx context.Context, p peer, w workload, addrs []string, s settings, t timing, counters *nodeCounters, keyPrefix string) (sample, error) {
	clients, err := openClients(p, w.lockers(), addrs, s)
	if err != nil {
		return sample{}, err
	}
	defer closeClients(clients) //nolint:errcheck // nothing to do about it at the end of a case

	keys := w.goroutines
	if w.oneKey {
		keys = 1
	}
	holders := make([]atomic.Int32, keys)
	var (
		overlaps  atomic.Int64
		measuring atomic.Bool
		workers   = make([]worker, w.goroutines)
		wg        sync.WaitGroup
	)
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	runtime.GC()
	for g := range workers {
		k := 0
		if !w.oneKey {
			k = g
		}
		wg.Add(1)
		go func(l locker, me *worker, k int, key string) {
			defer wg.Done()
			drive(runCtx, l, w.hold, key, &holders[k], &overlaps, &measuring, me)
		}(clients[clientOf(g, len(clients))], &workers[g], k, fmt.Sprintf("%s:%d", keyPrefix, k))
	}

	wait := func(d time.Duration) error {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(d):
			return nil
		}
	}
	var (
		before, after counts
		cpu0, cpu1    time.Duration
		t0, t1        time.Time
	)
	err = wait(t.warmup)
	if err == nil {
		before, err = counters.read()
	}
	if err == nil {
		cpu0, t0 = cpuTime(), time.Now()
		measuring.Store(true)
		err = wait(t.duration)
		measuring.Store(false)
		cpu1, t1 = cpuTime(), time.Now()
	}
	if err == nil {
		after, err = counters.read()
	}
	stop()
	wg.Wait()
	if err != nil {
		return sample{}, err
	}

	var (
		sm     sample
		counts = make([]float64, len(workers))
		all    []time.Duration
	)
	for i := range workers {
		me := &workers[i]
		sm.grants += me.grants
		sm.gaveUp += me.gaveUp
		sm.unlockErrs += me.unlockErrs
		if me.firstErr != nil && sm.firstErr == "" {
			sm.firstErr = me.firstErr.Error()
		}
		counts[i] = float64(me.grants)
		all = append(all, me.lats...)
	}
	sm.lat = summarize(all)
	sm.jain = jain(counts)
	sm.overlaps = overlaps.Load()
	sm.opsPerSec = float64(sm.grants) / t1.Sub(t0).Seconds()
	if sm.grants > 0 {
		sm.cpuPerOp = (cpu1 - cpu0) / time.Duration(sm.grants)
		sm.cmdsPerOp = float64(counters.commandsBetween(before, after)) / float64(sm.grants)
	}
	sm.conns = after.connections - before.connections
	return sm, nil
}

// drive is one goroutine of a case. The latency of a grant runs from the
// moment the goroutine wanted the lock, across the times its library gave
// up and it called again, to the grant.
func drive(ctx context.Context, l locker, hold time.Duration, key string, holders *atomic.Int32, overlaps *atomic.Int64, measuring *atomic.Bool, me *worker) {
	wanted := time.Now()
	for ctx.Err() == nil {
		unlock, err := l.lock(ctx, key)
		if err != nil {
			if ctx.Err() == nil && measuring.Load() {
				me.gaveUp++
				if me.firstErr == nil {
					me.firstErr = err
				}
			}
			continue
		}
		lat := time.Since(wanted)
		if holders.Add(1) > 1 {
			overlaps.Add(1)
		}
		if measuring.Load() {
			me.grants++
			me.lats = append(me.lats, lat)
		}
		if hold > 0 {
			time.Sleep(hold)
		}
		holders.Add(-1)
		uctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		if err := unlock(uctx); err != nil && measuring.Load() {
			me.unlockErrs++
			if me.firstErr == nil {
				me.firstErr = fmt.Errorf("unlock: %w", err)
			}
		}
		cancel()
		wanted = time.Now()
	}
}
