package chaos

import "time"

// Scenario is one run of the workloads under one fault schedule.
type Scenario struct {
	Name string
	// Safe says the README's guarantees cover it: any violation fails the
	// suite. An unsafe scenario shows what a documented-unsafe procedure
	// costs; only its resource leaks fail the suite.
	Safe bool
	// Fsync starts the nodes with appendonly yes and appendfsync always.
	Fsync bool
	// Mix weighs the workloads among the clients; nil is the default mix.
	Mix map[Workload]int
	// faults injects the faults until the scenario's time is up.
	faults func(f *faults)
}

// Settings size a run of the suite.
type Settings struct {
	Nodes    int
	Clients  int
	Duration time.Duration // of each scenario, faults and workloads
	Load     Load
}

// Full is the run of make chaos: every scenario within about six minutes
// on two cores, and more than 10,000 grants in the safe scenarios.
var Full = Settings{Nodes: 5, Clients: 16, Duration: 25 * time.Second, Load: defaultLoad}

// Short is the run of make test: every scenario, briefly, within about 90
// seconds.
var Short = Settings{Nodes: 5, Clients: 10, Duration: 4 * time.Second, Load: defaultLoad}

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
}

var defaultMix = map[Workload]int{Acquire: 9, DoOrSkip: 3, Do: 2, KeepAlive: 2}

// Scenarios returns the suite: the safe scenarios first, then the
// immediate restarts without and with persistence.
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
		{Name: "majority restarted empty at once (unsafe)", Safe: false, faults: restartAtOnce},
		{Name: "majority restarted at once, appendfsync always", Safe: true, Fsync: true, faults: restartAtOnce},
	}
}

// minorityPaused stops up to a minority of nodes (SIGSTOP) for a fraction
// of a TTL to one and a half, again and again.
func minorityPaused(f *faults) {
	for f.sleep(f.between(100*time.Millisecond, 400*time.Millisecond)) {
		nodes := f.pick(1 + f.rng.IntN(f.minority()))
		for _, i := range nodes {
			f.pause(i)
		}
		f.sleep(f.between(f.ttls(0.3), f.ttls(1.5)))
		for _, i := range nodes {
			f.resume(i)
		}
	}
}

// minorityKilled kills up to a minority of nodes with SIGKILL and brings
// them back empty once the largest TTL has passed.
func minorityKilled(f *faults) {
	for f.sleep(f.between(200*time.Millisecond, 600*time.Millisecond)) {
		nodes := f.pick(1 + f.rng.IntN(f.minority()))
		for _, i := range nodes {
			f.kill(i)
		}
		f.sleep(f.maxTTL + f.between(downFor, 500*time.Millisecond))
		for _, i := range nodes {
			f.revive(i)
		}
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
			nodes := f.pick(k)
			for _, i := range nodes {
				f.latency(i, f.between(lo, hi))
			}
			f.sleep(f.between(f.ttls(1), f.ttls(2)))
			for _, i := range nodes {
				f.latency(i, 0)
			}
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
		nodes := f.pick(k)
		for _, i := range nodes {
			f.blackHole(i)
		}
		f.sleep(f.between(f.ttls(0.5), f.ttls(2)))
		for _, i := range nodes {
			f.heal(i)
		}
	}
}

// longJobsPaused pauses minorities for the first half, while the long jobs
// must keep their locks, and majorities for the second, when they must
// hear of the loss before their locks run out.
func longJobsPaused(f *faults) {
	half := time.Until(f.end) / 2
	phase2 := time.Now().Add(half)
	for f.sleep(f.between(100*time.Millisecond, 400*time.Millisecond)) {
		k, d := 1+f.rng.IntN(f.minority()), f.between(f.ttls(0.5), f.ttls(1.5))
		if time.Now().After(phase2) {
			k, d = f.majority(), f.between(f.ttls(0.5), f.ttls(2))
		}
		nodes := f.pick(k)
		for _, i := range nodes {
			f.pause(i)
		}
		f.sleep(d)
		for _, i := range nodes {
			f.resume(i)
		}
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
// take it; with appendfsync always they come back with the node.
func restartAtOnce(f *faults) {
	for f.sleep(f.between(f.ttls(0.25), f.ttls(0.5))) {
		for _, i := range f.pick(f.majority()) {
			f.restart(i)
		}
	}
}
