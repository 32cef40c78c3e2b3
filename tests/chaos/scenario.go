package chaos

import (
	"slices"
	"time"
)

// Scenario is one run of the workloads under one fault schedule.
type Scenario struct {
	Name string
	// Safe says the README's guarantees cover it: any violation fails the
	// suite. An unsafe scenario shows what a documented-unsafe procedure
	// costs; only its resource leaks fail the suite.
	Safe bool
	// Fsync starts the nodes with appendonly yes and appendfsync always.
	Fsync bool
	// Replicas gives each node a replica, to which the faults may fail it
	// over (faults.failover): each node is then a deployment of a master
	// and a replica behind one address.
	Replicas bool
	// Query is added to the URL of every node the clients reach, e.g.
	// "?wait=1" for durable votes (redis.WithWait).
	Query string
	// Mix weighs the workloads among the clients; nil is the default mix.
	Mix map[Workload]int
	// Skew has the clients keep each node's time by a clock rate the
	// faults set (Clocks, Skewed).
	Skew bool
	// Procs runs the clients as processes of their own (Settings.Procs of
	// them, and no others), which the faults can stop and continue, and
	// which write to a Store that checks fencing tokens through the
	// Redis guard.
	Procs bool
	// NoQuarantine turns off the clients' quarantine of restarted nodes
	// (redlock.WithQuarantine), to show what it prevents.
	NoQuarantine bool
	// LockDelay, in TTLs, has the client processes take their locks with
	// redlock.WithLockDelay, and CheckLockDelay check the delay.
	LockDelay float64
	// Brief scenarios last Settings.Brief, when set, instead of Duration:
	// the short run has them briefly.
	Brief bool
	// Steady scenarios hold one state, for their availability: they last
	// Settings.Steady, when set, instead of Duration.
	Steady bool
	// MinAvailability is the least share of the baseline's lock grants per
	// second that the scenario must reach (Result.Availability); 0 for no
	// floor. It fails the full and long runs, where the baseline ran
	// before it; the short run only reports it.
	MinAvailability float64
	// before, when set, injects the faults the clients are made in: it
	// runs once the nodes and the paths to them are up and before any
	// client (its redlock.Client, or its process) exists.
	before func(f *faults)
	// faults injects the faults until the scenario's time is up.
	faults func(f *faults)
}

// Settings size a run of the suite.
type Settings struct {
	Nodes    int
	Clients  int
	Procs    int           // client processes, in the scenarios that run them
	Duration time.Duration // of each scenario, faults and workloads
	Brief    time.Duration // of the Brief scenarios, when set
	Steady   time.Duration // of the Steady scenarios, when set
	Load     Load
	// Prims are the primitives' clients, by workload, beside the lock's
	// Clients in every scenario that runs clients in the test's process;
	// the clients of sets of names (AcquireAll) among them.
	Prims map[Workload]int
}

// Full is the run of make chaos: every scenario within about seven
// minutes on two cores, and more than 10,000 grants in the safe
// scenarios.
var Full = Settings{Nodes: 5, Clients: 16, Procs: 6, Duration: 25 * time.Second, Steady: 10 * time.Second,
	Load: defaultLoad, Prims: fullPrims}

// Short is the run of make test: every scenario, briefly, within about 70
// seconds.
var Short = Settings{Nodes: 5, Clients: 10, Procs: 4, Duration: 4 * time.Second, Brief: 2 * time.Second,
	Steady: 2 * time.Second, Load: defaultLoad, Prims: shortPrims}

// Long is the run of make chaos LONG=1: the full run, six times as long
// (about 40 minutes), for more than 100,000 grants in the safe scenarios.
var Long = Settings{Nodes: 5, Clients: 16, Procs: 6, Duration: 150 * time.Second, Steady: 60 * time.Second,
	Load: defaultLoad, Prims: fullPrims}

// The primitives' clients of the full and long runs, and of the short
// run: more permit clients than a semaphore's permits, readers beside
// writers, campaigners beside an observer, and clients taking sets of
// names, enough of them for their pairs and triples of six names to
// collide. They are fewer than the lock's clients: on a loaded machine
// every client takes its share of the process's time from the lock's.
var (
	fullPrims  = map[Workload]int{Permit: 4, Reader: 2, Writer: 2, Leader: 2, Observer: 1, AcquireAll: 4}
	shortPrims = map[Workload]int{Permit: 4, Reader: 2, Writer: 1, Leader: 2, AcquireAll: 3}
)

// procLoad is what the client processes do with locks of ttl: hold each
// for 50–150 ms between two writes to the store, and wait for a lock as
// long as a stopped holder can keep it.
func procLoad(ttl time.Duration) Load {
	return Load{TTL: ttl, MinJob: 50 * time.Millisecond, MaxJob: 150 * time.Millisecond, Think: 20 * time.Millisecond,
		RetryCount: -1, RetryDelay: 20 * time.Millisecond, RetryJitter: 10 * time.Millisecond, Patience: 2*ttl + time.Second/2}
}

var defaultLoad = Load{
	Names:       []string{"s0", "s1", "s2"},
	LongNames:   []string{"L0", "L1"},
	TTL:         time.Second,
	MaxHold:     20 * time.Millisecond,
	MinJob:      1500 * time.Millisecond,
	MaxJob:      3 * time.Second,
	Think:       20 * time.Millisecond,
	RetryCount:  25,
	RetryDelay:  20 * time.Millisecond,
	RetryJitter: 10 * time.Millisecond,
	Patience:    time.Second,
	Goroutines:  2,
	Semaphores:  []Semaphore{{Name: "P0", Permits: 3}, {Name: "P1", Permits: 2}},
	RWNames:     []string{"R0"},
	Elections:   []string{"E0"},
	SetNames:    []string{"M0", "M1", "M2", "M3", "M4", "M5"},
	PrimHold:    200 * time.Millisecond,
}

var defaultMix = map[Workload]int{Acquire: 9, DoOrSkip: 3, Do: 2, KeepAlive: 2}

// skewMix adds clients that hold their locks to the end of the validity,
// where a node whose clock runs fast has already let them go.
var skewMix = map[Workload]int{Acquire: 6, DoOrSkip: 2, Do: 1, KeepAlive: 1, Holdout: 6}

// Scenarios returns the suite: the safe scenarios first, then the
// immediate restarts: without persistence, where the clients' quarantine
// of restarted nodes keeps the lock safe and turning it off does not,
// and with persistence; the unsafe skew; and last the states of a failed
// minority, held for the whole run, whose availability has a floor. The
// baseline comes first, for the others' share of its availability; new
// scenarios go last, so that a seed replays the earlier ones as before.
func Scenarios() []Scenario {
	return []Scenario{
		{Name: "baseline", Safe: true, faults: func(f *faults) { f.sleep(time.Hour) }},
		{Name: "minority paused", Safe: true, faults: minorityPaused},
		{Name: "minority killed, restarted late", Safe: true, faults: minorityKilled},
		{Name: "latency on a minority", Safe: true, faults: latencyOn(false)},
		{Name: "latency on a majority", Safe: true, faults: latencyOn(true)},
		{Name: "majority black-holed, healed", Safe: true, faults: majorityBlackHoled},
		{Name: "long Do jobs, minority then majority paused", Safe: true,
			Mix: map[Workload]int{Acquire: 6, DoOrSkip: 2, Do: 5, KeepAlive: 3}, faults: longJobsPaused},
		{Name: "everything combined", Safe: true, faults: combined},
		{Name: "clocks skewed below the drift factor", Safe: true, Skew: true, Brief: true, Mix: skewMix,
			faults: clocksSkewed(safeSkew)},
		{Name: "asymmetric partitions, split views", Safe: true, Brief: true, faults: splitViews},
		{Name: "client processes stopped past validity, fenced store", Safe: true, Procs: true, Brief: true,
			faults: stoppedProcs},
		{Name: quarantinedRestarts, Safe: true, faults: restartAtOnce},
		{Name: "majority restarted empty at once, no quarantine (unsafe)", Safe: false, NoQuarantine: true, faults: restartAtOnce},
		{Name: "majority restarted at once, appendfsync always", Safe: true, Fsync: true, faults: restartAtOnce},
		{Name: "majority's clocks 10% fast (unsafe)", Safe: false, Skew: true, Brief: true, Mix: skewMix,
			faults: clocksSkewed(unsafeSkew)},
		// A failed minority costs nothing: the same safety, and at least
		// minorityFloor of the baseline's grants per second.
		{Name: "one node silent since before the clients start", Safe: true, Steady: true,
			MinAvailability: minorityFloor, before: silentFromTheStart(1), faults: holdState},
		{Name: "two nodes silent since before the clients start", Safe: true, Steady: true,
			MinAvailability: minorityFloor, before: silentFromTheStart(2), faults: holdState},
		{Name: "one node silenced mid-run", Safe: true, Steady: true,
			MinAvailability: minorityFloor, faults: silencedMidRun},
		{Name: "one node dead since before the clients start", Safe: true, Steady: true,
			MinAvailability: minorityFloor, before: deadFromTheStart(1), faults: holdState},
		// Lock-delay: the stopped holders of the processes' scenario wake
		// up no later than lockDelayTTLs after their locks' expiry, so
		// none finds another holder granted (CheckLockDelay), and no
		// unfenced write comes after a later holder's.
		{Name: "client processes stopped past validity, lock-delay", Safe: true, Procs: true, Brief: true,
			LockDelay: lockDelayTTLs, faults: stoppedProcs},
		// Replicated deployments: a failover loses what the replica had
		// not received, unless a vote waits for it (rule 20).
		{Name: "majority failed over, durable votes (wait=1)", Safe: true, Replicas: true, Query: "?wait=1", faults: failovers},
		{Name: "majority failed over, no durable votes (unsafe)", Safe: false, Replicas: true, faults: failovers},
		{Name: "majority restarted at once, appendfsync always, waitaof=1,0", Safe: true, Fsync: true,
			Query: "?waitaof=1,0", faults: restartAtOnce},
	}
}

// failovers fails a majority of the deployments over to their replicas,
// again and again. Each replica is cut from its master first, so that what
// the master acknowledges meanwhile is not on it when it is promoted, as
// when a master dies ahead of its replication (a stopped replica would not
// do: what the master sent waits in the replica's socket, and it reads it
// all once continued); the failover comes once one new token of a job's
// lock is on all of those masters (grantedSince), or after a TTL and a
// half without. Without durable votes that grant is lost while its holder holds
// it, and the promoted replicas grant the lock again: the overlap the
// unsafe scenario must show. With them, the write was no vote.
func failovers(f *faults) {
	for {
		nodes := f.pick(f.majority())
		for _, i := range nodes {
			f.replicas[i].MustDo("REPLICAOF", "NO", "ONE") // nothing reaches it until the paths lead there
		}
		seen, until := f.jobValues(nodes), time.Now().Add(f.ttls(1.5))
		ok, granted := true, false
		for ok && !granted && time.Now().Before(until) {
			if granted = f.grantedSince(nodes, seen); !granted {
				ok = f.sleep(20 * time.Millisecond)
			}
		}
		if granted {
			f.counted("failover of a job's lock")
		}
		f.failover(nodes)
		if !ok || !f.sleep(f.ttls(1.5)) {
			return
		}
	}
}

// lockDelayTTLs is the lock-delay of the lock-delay scenario, in TTLs: a
// stopped holder is continued at most 2.5 TTLs after it was stopped, which
// is no earlier than its grant.
const lockDelayTTLs = 2.5

// minorityFloor is the least share of the baseline's lock grants per
// second that the scenarios of a failed minority must reach: a node that
// does not answer, or refuses, must not make every call wait for it.
const minorityFloor = 0.5

// silentFromTheStart stops k nodes (SIGSTOP) before the clients are made,
// for the whole run: the clients meet them silent (their connects
// succeed, nothing ever answers) from their first call on.
func silentFromTheStart(k int) func(f *faults) {
	return func(f *faults) {
		for _, i := range f.pick(k) {
			f.pause(i)
		}
	}
}

// deadFromTheStart kills k nodes and closes their ports before the
// clients are made, for the whole run: every connect to them is refused.
// They come back, empty, once the scenario's time is up, for the leak
// checks.
func deadFromTheStart(k int) func(f *faults) {
	return func(f *faults) {
		for _, i := range f.pick(k) {
			f.down(i)
		}
	}
}

// holdState keeps the state the clients were made in (Scenario.before)
// until the scenario's time is up.
func holdState(f *faults) { f.sleep(time.Until(f.end)) }

// silencedMidRun stops one node (SIGSTOP) once the clients have worked
// for a quarter to a half of the scenario's time, and leaves it silent to
// the end: the clients knew it answering, and must stop waiting for it.
func silencedMidRun(f *faults) {
	left := time.Until(f.end)
	if !f.sleep(f.between(left/4, left/2)) {
		return
	}
	f.pause(f.pick(1)[0])
	f.sleep(time.Until(f.end))
}

// clientsSettle is how long the restart scenarios wait before their first
// restart (see restartAtOnce).
const clientsSettle = 1500 * time.Millisecond

// quarantinedRestarts is the scenario whose nodes restart empty at once
// and stay safe: the clients quarantine them (redlock.WithQuarantine).
const quarantinedRestarts = "majority restarted empty at once, quarantined"

// The clock skews of the skew scenarios, as how much faster than true time
// the fastest clocks run. The client sets aside ttl·0.01 + 2 ms for drift
// (redlock.DefaultDriftFactor), so a key it set with a TTL of ttl must
// live, in true time, at least ttl − that: ttl/(1+s) ≥ ttl·(1 − 0.01) −
// 2 ms holds for s = 0.9% and fails, by about 80 ms of a 1 s TTL, for 10%.
const (
	safeSkew   = 0.009
	unsafeSkew = 0.10
)

// clocksSkewed runs a majority of the nodes' clocks fast by s and the others at
// any rate from s slow to s fast, drawn again every one to three TTLs.
func clocksSkewed(s float64) func(f *faults) {
	return func(f *faults) {
		for {
			fast := f.pick(f.majority())
			for i := range f.n() {
				rate := 1 - s + 2*s*f.rng.Float64()
				if slices.Contains(fast, i) {
					rate = 1 + s
				}
				f.skew(i, rate)
			}
			if !f.sleep(f.between(f.ttls(1), f.ttls(3))) {
				return
			}
		}
	}
}

// splitViews cuts clients off nodes, each client its own way, for half a
// TTL to two, again and again. Half of the time the nodes are split around
// a bridge: two halves of the others, each client seeing one half and the
// bridge, which is a quorum for it, so the quorums of the two sides share
// only the bridge. Otherwise each client sees its own random set of nodes,
// a quorum or, now and then, fewer.
func splitViews(f *faults) {
	for f.sleep(f.between(f.ttls(0.2), f.ttls(0.5))) {
		views := make([][]int, f.clients())
		if f.rng.IntN(2) == 0 {
			order := f.pick(f.n())
			bridge, rest := order[0], order[1:]
			sides := [][]int{rest[:len(rest)/2], rest[len(rest)/2:]}
			for c := range views {
				views[c] = append([]int{bridge}, sides[f.rng.IntN(2)]...)
			}
			f.count["split around a bridge"]++
		} else {
			for c := range views {
				k := f.majority()
				if f.rng.IntN(4) == 0 {
					k = f.minority() + f.rng.IntN(f.n()-f.minority()+1)
				}
				views[c] = f.pick(k)
			}
			f.count["random views"]++
		}
		var cut [][2]int
		for c, view := range views {
			for i := range f.n() {
				if !slices.Contains(view, i) {
					f.cutOff(c, i)
					cut = append(cut, [2]int{c, i})
				}
			}
		}
		f.sleep(f.between(f.ttls(0.5), f.ttls(2)))
		for _, ci := range cut {
			f.mend(ci[0], ci[1])
		}
	}
}

// stoppedProcs stops a client process that holds a lock (SIGSTOP) every
// 50–250 ms, at most half of them at once, and continues it 1.2 to 2.5
// TTLs later: past its lock's validity, when another process has likely
// taken the lock and written to the store, which must then refuse the
// stopped holder's writes if they are fenced.
func stoppedProcs(f *faults) {
	if f.procs == nil {
		f.t.Fatal("chaos: scenario stops client processes, but runs none")
	}
	for f.sleep(f.between(50*time.Millisecond, 250*time.Millisecond)) {
		p, ok := f.procs.pickHolding(f.rng, len(f.procs.list)/2)
		if !ok {
			continue
		}
		if err := f.procs.stop(p); err != nil {
			f.t.Fatalf("chaos: %v", err)
		}
		f.count["process stop"]++
		f.after(f.between(f.ttls(1.2), f.ttls(2.5)), func() {
			if err := f.procs.cont(p); err != nil {
				f.t.Fatalf("chaos: %v", err)
			}
		})
	}
}

// minorityPaused stops up to a minority of nodes (SIGSTOP) for a fraction
// of a TTL to one and a half, again and again.
func minorityPaused(f *faults) {
	for f.sleep(f.between(100*time.Millisecond, 400*time.Millisecond)) {
		f.outage(f.pick(1+f.rng.IntN(f.minority())), f.pause, f.resume, f.ttls(0.3), f.ttls(1.5))
	}
}

// minorityKilled kills up to a minority of nodes with SIGKILL and brings
// them back empty once the largest TTL has passed.
func minorityKilled(f *faults) {
	for f.sleep(f.between(200*time.Millisecond, 600*time.Millisecond)) {
		f.outage(f.pick(1+f.rng.IntN(f.minority())), f.kill, f.revive, f.maxTTL+downFor, f.maxTTL+500*time.Millisecond)
	}
}

// latencyOn delays a minority by up to three server timeouts each way (so
// that their calls often time out), or a majority by up to about half a
// server timeout each way (so that grants come slowly, with less validity,
// and now and then not at all).
func latencyOn(majority bool) func(f *faults) {
	return func(f *faults) {
		timeout := f.maxTTL / 20 // the client's default server timeout
		for f.sleep(f.between(100*time.Millisecond, 300*time.Millisecond)) {
			k, lo, hi := f.minority(), timeout/5, 3*timeout
			if majority {
				k, lo, hi = f.majority(), timeout/25, 3*timeout/5
			}
			slow := func(i int) { f.latency(i, f.between(lo, hi)) }
			f.outage(f.pick(k), slow, func(i int) { f.latency(i, 0) }, f.ttls(1), f.ttls(2))
		}
	}
}

// majorityBlackHoled holds every byte to and from a majority (now and then
// every node) for up to two TTLs, then delivers it all late.
func majorityBlackHoled(f *faults) {
	for f.sleep(f.between(300*time.Millisecond, 800*time.Millisecond)) {
		k := f.majority()
		if f.rng.IntN(4) == 0 {
			k = f.n()
		}
		f.outage(f.pick(k), f.blackHole, f.heal, f.ttls(0.5), f.ttls(2))
	}
}

// longJobsPaused pauses minorities for the first half, while the long jobs
// must keep their locks, and majorities for the second, when they must
// hear of the loss before their locks run out.
func longJobsPaused(f *faults) {
	half := time.Until(f.end) / 2
	phase2 := time.Now().Add(half)
	for f.sleep(f.between(100*time.Millisecond, 400*time.Millisecond)) {
		k, longest := 1+f.rng.IntN(f.minority()), f.ttls(1.5)
		if time.Now().After(phase2) {
			k, longest = f.majority(), f.ttls(2)
		}
		f.outage(f.pick(k), f.pause, f.resume, f.ttls(0.5), longest)
	}
}

// combined draws a fault every 100–400 ms from everything above, on any
// number of nodes, each undone on its own schedule.
func combined(f *faults) {
	timeout := f.maxTTL / 20
	for f.sleep(f.between(100*time.Millisecond, 400*time.Millisecond)) {
		nodes := f.pick(1 + f.rng.IntN(f.n()))
		switch f.rng.IntN(5) {
		case 0:
			for _, i := range nodes {
				f.pause(i)
				f.after(f.between(f.ttls(0.2), f.ttls(1.5)), func() { f.resume(i) })
			}
		case 1:
			for _, i := range nodes[:min(len(nodes), f.minority())] {
				f.kill(i)
				f.after(f.maxTTL+f.between(downFor, 500*time.Millisecond), func() { f.revive(i) })
			}
		case 2:
			for _, i := range nodes {
				f.latency(i, f.between(timeout/25, 3*timeout))
				f.after(f.between(f.ttls(0.5), f.ttls(2)), func() { f.latency(i, 0) })
			}
		case 3:
			for _, i := range nodes {
				f.blackHole(i)
				f.after(f.between(f.ttls(0.2), f.ttls(2)), func() { f.heal(i) })
			}
		case 4:
			for _, i := range nodes {
				f.reset(i)
			}
		}
	}
}

// restartAtOnce is a rolling restart done too fast: a majority of nodes,
// one after the other, each killed and started again at once, every
// quarter to half a TTL. Without persistence a holder's keys are then gone
// from a majority while its lock is still valid, and another client can
// take it, unless the clients quarantine restarted nodes for a TTL; with
// appendfsync always the keys come back with the node.
//
// The first restart comes once the clients are past their first second
// (clientsSettle): a node that restarts in a client's first second,
// before the client ever reached it, cannot be told from one that was up
// before the client was made (Redis gives uptimes in whole seconds), so
// the quarantine does not catch it, as the README says. Client processes
// spawned at the start reach the nodes a few hundred milliseconds in.
func restartAtOnce(f *faults) {
	if !f.sleep(clientsSettle) {
		return
	}
	for f.sleep(f.between(f.ttls(0.25), f.ttls(0.5))) {
		for _, i := range f.pick(f.majority()) {
			f.restart(i)
		}
	}
}
