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
	// names is the number of names of each grant, for the set peers
	// (sets.go); 0 for one lock. The other peers skip such a workload,
	// and it runs only when -workloads names it.
	names int
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
		{name: "64-one-key-hold", title: "64 goroutines on one key, holding it 1 ms", goroutines: 64, oneKey: true, hold: time.Millisecond},
		{name: "8c-one-key-hold", title: "8 clients on one key, 1 goroutine each, holding it 1 ms", goroutines: 8, oneKey: true, hold: time.Millisecond, clients: 8},
		{name: "8c-64-one-key", title: "64 goroutines dealt over 8 clients on one key, no hold", goroutines: 64, oneKey: true, clients: 8},
		{name: "8c-64-one-key-hold", title: "64 goroutines dealt over 8 clients on one key, holding it 1 ms", goroutines: 64, oneKey: true, hold: time.Millisecond, clients: 8},
		{name: "64-distinct-set4", title: "set of 4 names, 64 goroutines, distinct sets", goroutines: 64, names: setSize},
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
	grants    int64
	opsPerSec float64
	lat       latencies
	jain      float64
	// jainClients is Jain's index of the grants of each client (0 for a
	// case on one client): the fairness between processes.
	jainClients float64
	overlaps    int64
	cpuPerOp    time.Duration
	cmdsPerOp   float64
	gaveUp      int64 // lock calls that returned an error (the library gave up)
	unlockErrs  int64
	conns       int64 // connections the nodes accepted in the window
	firstErr    string
	// What a library that hangs left behind (degraded states): goroutines
	// still in a call stuckAfter after the window, goroutines the case
	// stopped waiting for, and a close that did not return in closeWait.
	stuck, abandoned int64
	closeStuck       bool
	// cannotStart says why the library's clients could not be created in
	// a degraded state; nothing else was measured then.
	cannotStart string
}

// worker is one goroutine's record; only it writes it, under mu, which the
// case takes to read it: a goroutine stuck in its library is read without
// being waited for.
type worker struct {
	mu         sync.Mutex
	grants     int64
	lats       []time.Duration
	gaveUp     int64
	unlockErrs int64
	firstErr   error
}

// The waits that keep a case bounded when a library hangs on a node that
// does not answer.
const (
	// stuckAfter: how long the goroutines get, after the window, to
	// return from the call they are in, before the nodes are put back.
	stuckAfter = time.Second
	// abandonAfter: how long they get once the nodes answer again, before
	// the case stops waiting for them and goes on without them.
	abandonAfter = 5 * time.Second
	// closeWait: how long the clients get to close.
	closeWait = 5 * time.Second
)

// hooks are what a degraded state does during a case; the zero value does
// nothing, as in the healthy state.
type hooks struct {
	// mid runs halfway through the measured window.
	mid func() error
	// undo runs after the window, once the goroutines had stuckAfter to
	// return: it puts the nodes back before the case waits for them again
	// and closes the clients.
	undo func() error
	// openWait bounds the creation of the clients; 0 is closeWait.
	openWait time.Duration
}

// startError is a case whose clients could not be created in time.
type startError struct{ err error }

func (e *startError) Error() string { return "cannot start: " + e.err.Error() }
func (e *startError) Unwrap() error { return e.err }

// runCase drives workload w through fresh lockers of p (w.lockers() of
// them, independent, the goroutines dealt over them) for t.warmup, then
// measures for t.duration. Cases run one at a time, so that the process's
// CPU time and the nodes' command counters belong to this case alone.
func runCase(ctx context.Context, p peer, w workload, addrs []string, s settings, t timing, counters *nodeCounters, keyPrefix string) (sample, error) {
	return runCaseWith(ctx, p, w, addrs, s, t, counters, keyPrefix, hooks{})
}

// runCaseWith is runCase with a degraded state's hooks. counters may be
// nil (a degraded state: a silent node would not answer INFO); then no
// Redis commands are counted. No wait is unbounded: the clients' creation
// (a *startError past h.openWait), the goroutines after the window and the
// clients' close each have a deadline, and what outlived it is reported in
// the sample.
func runCaseWith(ctx context.Context, p peer, w workload, addrs []string, s settings, t timing, counters *nodeCounters, keyPrefix string, h hooks) (sample, error) {
	if h.openWait <= 0 {
		h.openWait = closeWait
	}
	clients, err := openBounded(ctx, p, w.lockers(), addrs, s, h.openWait)
	if err != nil {
		return sample{}, err
	}

	keys := w.goroutines
	if w.oneKey {
		keys = 1
	}
	holders := make([]atomic.Int32, keys)
	var (
		overlaps  atomic.Int64
		measuring atomic.Bool
		running   atomic.Int64
		workers   = make([]worker, w.goroutines)
		wg        sync.WaitGroup
		finished  = make(chan struct{})
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
		running.Add(1)
		go func(l locker, me *worker, k int, key string) {
			defer wg.Done()
			defer running.Add(-1)
			drive(runCtx, l, w.hold, key, &holders[k], &overlaps, &measuring, me)
		}(clients[clientOf(g, len(clients))], &workers[g], k, fmt.Sprintf("%s:%d", keyPrefix, k))
	}
	go func() { wg.Wait(); close(finished) }()

	wait := func(d time.Duration) error {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(d):
			return nil
		}
	}
	var (
		sm            sample
		before, after counts
		cpu0, cpu1    time.Duration
		t0, t1        time.Time
	)
	err = wait(t.warmup)
	if err == nil && counters != nil {
		before, err = counters.read()
	}
	if err == nil {
		cpu0, t0 = cpuTime(), time.Now()
		measuring.Store(true)
		if h.mid != nil {
			half := t.duration / 2
			if err = wait(half); err == nil {
				err = h.mid()
			}
			if err == nil {
				err = wait(t.duration - half)
			}
		} else {
			err = wait(t.duration)
		}
		measuring.Store(false)
		cpu1, t1 = cpuTime(), time.Now()
	}
	if err == nil && counters != nil {
		after, err = counters.read()
	}
	stop()
	if !waitClosed(finished, stuckAfter) {
		sm.stuck = running.Load()
	}
	if h.undo != nil {
		if uerr := h.undo(); uerr != nil && err == nil {
			err = uerr
		}
	}
	if !waitClosed(finished, abandonAfter) {
		sm.abandoned = running.Load()
	}
	sm.closeStuck = !closeBounded(clients, closeWait)
	if err != nil {
		return sample{}, err
	}

	counts := make([]float64, len(workers))
	perClient := make([]float64, len(clients))
	var all []time.Duration
	for i := range workers {
		me := &workers[i]
		me.mu.Lock()
		perClient[clientOf(i, len(clients))] += float64(me.grants)
		sm.grants += me.grants
		sm.gaveUp += me.gaveUp
		sm.unlockErrs += me.unlockErrs
		if me.firstErr != nil && sm.firstErr == "" {
			sm.firstErr = me.firstErr.Error()
		}
		counts[i] = float64(me.grants)
		all = append(all, me.lats...)
		me.mu.Unlock()
	}
	sm.lat = summarize(all)
	sm.jain = jain(counts)
	if len(clients) > 1 {
		sm.jainClients = jain(perClient)
	}
	sm.overlaps = overlaps.Load()
	sm.opsPerSec = float64(sm.grants) / t1.Sub(t0).Seconds()
	if sm.grants > 0 {
		sm.cpuPerOp = (cpu1 - cpu0) / time.Duration(sm.grants)
		if counters != nil {
			sm.cmdsPerOp = float64(counters.commandsBetween(before, after)) / float64(sm.grants)
		}
	}
	sm.conns = after.connections - before.connections
	return sm, nil
}

// waitClosed waits up to d for ch to be closed, and says whether it was.
func waitClosed(ch <-chan struct{}, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ch:
		return true
	case <-t.C:
		return false
	}
}

// openBounded opens the clients of a case, waiting no longer than wait: a
// library whose constructor waits on a node that does not answer gives a
// *startError, and what it opens later is closed as soon as it returns.
func openBounded(ctx context.Context, p peer, n int, addrs []string, s settings, wait time.Duration) ([]locker, error) {
	type opened struct {
		ls  []locker
		err error
	}
	ch := make(chan opened, 1)
	go func() {
		ls, err := openClients(p, n, addrs, s)
		ch <- opened{ls, err}
	}()
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case o := <-ch:
		if o.err != nil {
			return nil, &startError{o.err}
		}
		return o.ls, nil
	case <-t.C:
	case <-ctx.Done():
	}
	go func() {
		if o := <-ch; o.err == nil {
			closeClients(o.ls) //nolint:errcheck // nobody is waiting for it
		}
	}()
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	return nil, &startError{fmt.Errorf("no client after %v", wait)}
}

// closeBounded closes the clients, waiting no longer than wait, and says
// whether they closed in time; their errors are not reported (the end of a
// case: nothing to do about them).
func closeBounded(ls []locker, wait time.Duration) bool {
	done := make(chan struct{})
	go func() {
		closeClients(ls) //nolint:errcheck // see above
		close(done)
	}()
	return waitClosed(done, wait)
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
				me.mu.Lock()
				me.gaveUp++
				if me.firstErr == nil {
					me.firstErr = err
				}
				me.mu.Unlock()
			}
			continue
		}
		lat := time.Since(wanted)
		if holders.Add(1) > 1 {
			overlaps.Add(1)
		}
		if measuring.Load() {
			me.mu.Lock()
			me.grants++
			me.lats = append(me.lats, lat)
			me.mu.Unlock()
		}
		if hold > 0 {
			time.Sleep(hold)
		}
		holders.Add(-1)
		uctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		if err := unlock(uctx); err != nil && measuring.Load() {
			me.mu.Lock()
			me.unlockErrs++
			if me.firstErr == nil {
				me.firstErr = fmt.Errorf("unlock: %w", err)
			}
			me.mu.Unlock()
		}
		cancel()
		wanted = time.Now()
	}
}
