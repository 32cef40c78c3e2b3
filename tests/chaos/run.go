package chaos

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/goredlock/goredlock/internal/redistest"
	"github.com/goredlock/goredlock/redlock"
)

// Result is what one scenario did and what the checks found.
type Result struct {
	Scenario Scenario
	Report            // the checker's, with the leak checks' violations added
	Failures int      // operations that failed: not acquired, not released, errors
	ByKind   []string // Failures broken down, e.g. "acquire: not acquired 12"
	Skips    int      // DoOrSkip calls that skipped
	// FenceResets are fence-order breaks in a scenario whose nodes
	// restarted empty without fsync: they lost their fence counters, which
	// docs/design.md names as the limit of fencing. They are
	// reported, not counted as violations.
	FenceResets int
	// Stalled are late losses heard before Until while the test's process
	// itself was stalled as long (see stallProbe): the machine's lateness,
	// not the library's. Reported, not counted as violations.
	Stalled int
	// StopLate are grants returned after their Until to a client
	// process that had been stopped meanwhile: the stop explains them,
	// whatever the library did. Reported, not counted as violations.
	StopLate int
	// Writes sums up what the client processes wrote to the store.
	Writes WriteReport
	// Delays are the grants, in a scenario with a lock-delay, that ran
	// out without a release before their Until: CheckLockDelay checked
	// that no later grant of their name came within the delay.
	Delays int
	// Prims are the primitives' workloads: their checkers' reports and
	// their clients' failures, one per primitive that ran.
	Prims []PrimResult
	// Availability is the lock's grants per second while the faults were
	// in force (Ran long), and, once compared (compareAvailability), that
	// rate over the baseline's of the same run.
	Availability Availability
	Ran          time.Duration
	Faults       string // the faults injected
	Elapsed      time.Duration
}

// Failed returns the violations, the lock's and the primitives', that
// fail the suite: all of them in a safe scenario, only those no scenario
// excuses (Kind.Safety false: leaks, Observe repeating itself) in an
// unsafe one.
func (r Result) Failed() []Violation {
	vs := slices.Clone(r.Violations)
	for _, p := range r.Prims {
		vs = append(vs, p.Violations...)
	}
	var failed []Violation
	for _, v := range vs {
		if r.Scenario.Safe || !v.Kind.Safety() {
			failed = append(failed, v)
		}
	}
	return failed
}

// hasCommand reports whether node's engine knows the command name.
func hasCommand(node *redistest.Node, name string) bool {
	reply, err := node.Do("COMMAND", "INFO", name)
	list, _ := reply.([]any)
	return err == nil && len(list) == 1 && list[0] != nil
}

// Run runs one scenario on fresh nodes: the faults the clients are to be
// made in (Scenario.before) are injected first, then the clients work
// through their own paths (proxies) to the nodes while the faults are
// injected, then every fault is healed, the clients are closed, and the
// history, the store's writes and the leftovers are checked. Faults,
// workloads and names are drawn from seed; timing is not, so a seed
// replays the schedule, not the exact interleaving.
func Run(t testing.TB, sc Scenario, s Settings, seed uint64) Result {
	t.Helper()
	began := time.Now()
	var opts []redistest.Option
	if sc.Fsync {
		opts = append(opts, redistest.WithAppendFsyncAlways())
	}
	if sc.Replicas { // a replica's first sync at once, not after 5 s
		opts = append(opts, redistest.WithArgs("--repl-diskless-sync-delay", "0"))
	}
	cluster := redistest.Start(t, s.Nodes, opts...)
	var replicas []*redistest.Node
	if sc.Replicas {
		replicas = redistest.Start(t, s.Nodes, opts...).Nodes
		for i, r := range replicas {
			r.ReplicaOf(cluster.Nodes[i])
		}
	}
	if strings.Contains(sc.Query, "waitaof") && !hasCommand(cluster.Nodes[0], "WAITAOF") {
		t.Logf("chaos: %s: this engine has no WAITAOF (Redis 7.2 and later, Valkey have it): run without %s", sc.Name, sc.Query)
		sc.Query = ""
	}
	goroutines := takeGoroutineBaseline()

	// The lock's clients, then the primitives', or only processes.
	works, nprocs := append(assign(sc.Mix, s.Clients), primWorks(s.Prims)...), 0
	if sc.Procs {
		works, nprocs = nil, s.Procs
	}
	local := len(works)
	nodeAddrs := make([]string, s.Nodes)
	paths := make([][]*Proxy, s.Nodes) // paths[i][c]: client c's way to node i
	var allPaths []*Proxy
	closeProxies := sync.OnceFunc(func() {
		for _, p := range allPaths {
			p.Close()
		}
	})
	defer closeProxies()
	for i, n := range cluster.Nodes {
		nodeAddrs[i] = n.Addr()
		for c := range local + nprocs {
			p, err := Listen(n.Addr())
			if err != nil {
				t.Fatalf("chaos: path of client %d to node %d: %v", c, i, err)
			}
			paths[i] = append(paths[i], p)
			allPaths = append(allPaths, p)
		}
	}
	addrsOf := func(c int) []string {
		addrs := make([]string, s.Nodes)
		for i := range addrs {
			addrs[i] = paths[i][c].Addr()
		}
		return addrs
	}
	var clocks *Clocks
	if sc.Skew {
		clocks = NewClocks(s.Nodes)
	}
	// The state the clients are made in, and then their faults' schedule.
	f := newFaults(t, rand.New(rand.NewPCG(seed, 0xfa)), cluster.Nodes, paths, s.Load.TTL)
	f.replicas = replicas
	f.jobs = s.Load.LongNames
	if sc.before != nil {
		sc.before(f)
	}

	h := NewHistory()
	load := s.Load
	delay := time.Duration(sc.LockDelay * float64(load.TTL)) // the processes' lock-delay
	if sc.NoQuarantine {
		load.Quarantine = redlock.NoQuarantine
	}
	load.Query = sc.Query
	var clients []*client
	closeClients := sync.OnceFunc(func() {
		for _, c := range clients {
			if err := c.close(); err != nil {
				t.Errorf("chaos: closing client %d: %v", c.id, err)
			}
		}
	})
	defer closeClients()
	if local > 0 {
		for id, work := range works {
			c, err := newClient(id, work, addrsOf(id), &load, h, seed, clocks)
			if err != nil {
				t.Fatalf("chaos: client %d: %v", id, err)
			}
			clients = append(clients, c)
		}
	}
	var (
		store *Store
		ps    *procs
	)
	if nprocs > 0 {
		// The store keeps its data in a Redis of its own, beside the
		// lock's nodes and out of their faults, and checks the fences
		// there, through the Redis guard.
		data := redistest.Start(t, 1).Nodes[0]
		var err error
		if store, err = ListenStore(h, historyOrigin(h), data.Addr()); err != nil {
			t.Fatalf("chaos: store: %v", err)
		}
		defer store.Close()
		var cfgs []childConfig
		for k := range nprocs {
			id := local + k
			cfg := childConfig{ID: id, Addrs: addrsOf(id), Store: store.Addr(), Names: []string{"U0"},
				Load: procLoad(load.TTL), Seed: seed}
			if delay > 0 { // a waiter may wait through a TTL and the delay
				cfg.Load.LockDelay, cfg.Load.Patience = delay, cfg.Load.Patience+delay
			}
			if len(clientOptions(id)) > 0 { // the fenced half
				cfg.Names, cfg.Fenced = []string{"F0"}, true
			}
			cfgs = append(cfgs, cfg)
		}
		ps = startProcs(t, h, cfgs)
	}

	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	// Also when a fault ends the test early: the workloads stop before
	// their clients close.
	defer func() {
		stop()
		wg.Wait()
	}()
	probe := &stallProbe{h: h}
	wg.Add(1)
	go func() {
		defer wg.Done()
		probe.run(ctx)
	}()
	working := h.Now()
	var workers []*client
	for _, c := range clients {
		workers = append(workers, c.workers()...)
	}
	for _, c := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.run(ctx)
		}()
	}

	d := s.Duration
	switch {
	case sc.Brief && s.Brief > 0:
		d = s.Brief
	case sc.Steady && s.Steady > 0:
		d = s.Steady
	}
	f.restartNow = !sc.Safe || sc.Fsync || sc.Name == quarantinedRestarts
	f.clocks, f.procs = clocks, ps
	f.begin(d)
	sc.faults(f)
	f.sleep(time.Until(f.end)) // a schedule may end early
	healed := h.Now()          // grants from here on came with every fault undone
	f.healAll()
	stop()
	wg.Wait()
	for _, r := range replicas {
		r.Kill() // its link to its master is no client's connection
	}
	for i, n := range cluster.Nodes { // the masters now, after failovers
		nodeAddrs[i] = n.Addr()
	}

	closeClients()
	res := Result{Scenario: sc, Faults: f.summary()}
	var leaks []Violation
	if ps != nil {
		problems, procLeaks := ps.close()
		for _, p := range problems {
			t.Errorf("chaos: %s", p)
		}
		leaks = append(leaks, procLeaks...)
		if err := store.Close(); err != nil {
			t.Errorf("chaos: closing the store: %v", err)
		}
	}
	grants := h.Grants()
	byPrim := make(map[Primitive][]Grant)
	for _, g := range grants {
		byPrim[g.Workload.Primitive()] = append(byPrim[g.Workload.Primitive()], g)
	}
	res.Report = lockKind.check(byPrim[LockPrim], delay)
	if delay > 0 {
		d := lockDelayKind.check(byPrim[LockPrim], delay)
		res.Delays = d.Expired
		res.Violations = append(res.Violations, d.Violations...)
	}
	res.Ran = healed - working
	res.Availability = Availability{PerSecond: perSecond(byPrim[LockPrim], working, healed)}
	countersLost := !sc.Fsync && f.count["kill"]+f.count["restart now"] > 0 || sc.Replicas && sc.Query == ""
	if countersLost {
		res.Violations, res.FenceResets = withoutFenceOrder(res.Violations)
	}
	res.Prims = checkPrims(byPrim, clients, countersLost)
	for i, p := range res.Prims {
		res.Prims[i].Availability = Availability{PerSecond: perSecond(byPrim[p.Primitive], working, healed)}
	}
	if ps != nil {
		res.Violations, res.StopLate = ps.withoutStopped(res.Violations, grants, load.TTL)
		var stale []Violation
		res.Writes, stale = CheckWrites(store.Writes(), grants)
		res.Violations = append(res.Violations, stale...)
	}
	var stalled int
	res.Violations, stalled = probe.excuse(res.Violations, grants)
	res.Stalled += stalled
	for i := range res.Prims {
		res.Prims[i].Violations, stalled = probe.excuse(res.Prims[i].Violations, grants)
		res.Stalled += stalled
	}
	leaks = append(leaks, checkConns(nodeAddrs, allPaths, settleWait)...)
	closeProxies()
	// Every key a lock wrote had a TTL of at most load.TTL when it was
	// written. Nothing writes once the clients are closed and the proxies
	// have delivered what they still carried (a request delayed by latency
	// lands after its client gave up, as a packet in flight would). So
	// every key must be gone by load.TTL from now (give or take 50 ms),
	// which checkKeys reads from the keys' remaining TTLs without waiting.
	drained := time.Now()
	// (A lock taken with a lock-delay keeps its key the delay longer.)
	leaks = append(leaks, checkKeys(nodeAddrs, drained.Add(load.TTL+delay+50*time.Millisecond))...)
	leaks = append(leaks, goroutines.check(settleWait)...)
	res.Violations = append(res.Violations, leaks...)

	byKind := make(map[string]int)
	for _, c := range workers {
		if c.work.Primitive() != LockPrim {
			continue // in its primitive's result
		}
		for k, n := range c.failures {
			byKind[k] += n
		}
		res.Skips += c.skips
	}
	if ps != nil {
		ps.failures(byKind)
	}
	for k, n := range byKind {
		res.Failures += n
		res.ByKind = append(res.ByKind, fmt.Sprintf("%s %d", k, n))
	}
	slices.Sort(res.ByKind)
	res.Elapsed = time.Since(began)
	return res
}

// withoutFenceOrder splits the fence-order violations off vs.
func withoutFenceOrder(vs []Violation) (rest []Violation, fence int) {
	for _, v := range vs {
		if v.Kind == FenceOrder {
			fence++
			continue
		}
		rest = append(rest, v)
	}
	return rest, fence
}

// assign gives each of n clients a workload, in proportion to mix and at
// least one client per workload in it.
func assign(mix map[Workload]int, n int) []Workload {
	if mix == nil {
		mix = defaultMix
	}
	total := 0
	for _, w := range mix {
		total += w
	}
	var works []Workload
	for _, wk := range lockKind.works {
		work := wk.w
		if mix[work] == 0 {
			continue
		}
		for range max(1, mix[work]*n/total) {
			works = append(works, work)
		}
	}
	for len(works) < n {
		works = append(works, Acquire)
	}
	return works[:n]
}
