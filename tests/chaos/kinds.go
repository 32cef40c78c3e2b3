package chaos

import (
	"context"
	"fmt"
	"time"
)

// holdKind is one row of the kinds table (holdKinds): one kind of hold the
// suite takes and checks, with the three things the run needs of it.
//
//   - Its traffic (works): the workloads whose grants are of this kind,
//     each with what one of its clients does, over and over, in the order
//     its clients are made.
//   - Its checks (check): the checker the run gives the grants of prim.
//   - Its report (cols, rate, note): its columns in its table
//     (reportTables), the head of its grants-per-second column where the
//     table puts the rates last, and what the test logs of it beside the
//     counts every kind has.
type holdKind struct {
	name  string
	prim  Primitive // what its grants are of (Workload.Primitive)
	works []work
	// check reads the grants of prim; delay is the scenario's lock-delay
	// (0 for none), which only the lock-delay's checker reads.
	check func(grants []Grant, delay time.Duration) Report
	cols  []column
	rate  string
	note  func(r Result, p PrimResult) string
}

// work is a workload and what one of its clients does until ctx ends;
// run is nil for the workload of the client processes, which childMain
// runs in processes of their own.
type work struct {
	w   Workload
	run func(c *client, ctx context.Context)
}

// The kinds. The lock's and the lock-delay's results are the scenario's
// own (Result.Report, Result.Delays), so that the lock's numbers stay
// comparable between runs; every other kind's is one of Result.Prims, in
// this order.
var (
	lockKind = holdKind{name: "lock", prim: LockPrim,
		works: []work{{Acquire, (*client).acquire}, {DoOrSkip, (*client).doOrSkip}, {Do, (*client).do},
			{KeepAlive, (*client).keepAlive}, {Holdout, (*client).holdout}, {Stopped, nil}},
		check: func(gs []Grant, _ time.Duration) Report { return Check(gs) },
		cols: []column{
			{head: "grants", cell: grantsCell, total: grantsTotal},
			{head: "grants/s", cell: func(_ Result, p PrimResult) any { return fmt.Sprintf("%.1f", p.Availability.PerSecond) }},
			{head: "of baseline", cell: func(_ Result, p PrimResult) any { return p.Availability.ofBaselineCell() }},
			{head: "floor", cell: func(r Result, _ PrimResult) any { return r.floorCell() }},
			{head: "violations", cell: violationsCell, total: violationsTotal},
			{head: "overlaps", cell: func(_ Result, p PrimResult) any { return p.Overlaps }},
			{head: "max overlap", cell: maxOverlapCell},
			{head: "lost", cell: func(_ Result, p PrimResult) any { return p.Lost }},
			{head: "passes", cell: func(_ Result, p PrimResult) any { return p.Passes }},
			{head: "failures", cell: func(_ Result, p PrimResult) any { return p.Failures }},
			{head: "skips", cell: func(r Result, _ PrimResult) any { return r.Skips }},
		}}

	// lockDelayKind is the lock taken with a lock-delay
	// (redlock.WithLockDelay) by the client processes of the scenario
	// that sets Scenario.LockDelay; its checker reads the lock's grants.
	lockDelayKind = holdKind{name: "lock with lock-delay", prim: LockPrim,
		works: []work{{Stopped, nil}},
		check: func(gs []Grant, d time.Duration) Report {
			expired, vs := CheckLockDelay(gs, d)
			return Report{Grants: len(gs), Expired: expired, Violations: vs}
		},
		note: func(r Result, _ PrimResult) string {
			return fmt.Sprintf("lock-delay %v TTLs: %d grants ran out unreleased, and no other holder was granted their names within the delay unless %s violations say so",
				r.Scenario.LockDelay, r.Delays, kindCount(r.Violations, DelayBroken))
		}}

	semaphoreKind = holdKind{name: "semaphore", prim: SemaphorePrim,
		works: []work{{Permit, (*client).permit}},
		check: func(gs []Grant, _ time.Duration) Report { return CheckSemaphore(gs) },
		cols: []column{
			{head: "permits", cell: grantsCell, total: grantsTotal},
			{head: "most", cell: mostCell},
			{head: "violations", cell: violationsCell, total: violationsTotal},
		},
		rate: "permits/s"}

	rwMutexKind = holdKind{name: "read-write lock", prim: RWMutexPrim,
		works: []work{{Reader, (*client).reader}, {Writer, (*client).writer}},
		check: func(gs []Grant, _ time.Duration) Report { return CheckRWMutex(gs) },
		cols: []column{
			{head: "reads", cell: func(_ Result, p PrimResult) any { return p.Grants - p.Writes },
				total: func(p PrimResult) int { return p.Grants - p.Writes }},
			{head: "writes", cell: func(_ Result, p PrimResult) any { return p.Writes },
				total: func(p PrimResult) int { return p.Writes }},
			{head: "most", cell: mostCell},
			{head: "violations", cell: violationsCell, total: violationsTotal},
		},
		rate: "holds/s"}

	electionKind = holdKind{name: "election", prim: ElectionPrim,
		works: []work{{Leader, (*client).campaign}, {Observer, (*client).observe}},
		check: func(gs []Grant, _ time.Duration) Report { return CheckElection(gs) },
		cols: []column{
			{head: "leaderships", cell: grantsCell, total: grantsTotal},
			{head: "violations", cell: violationsCell, total: violationsTotal},
			{head: "leader reads", cell: func(_ Result, p PrimResult) any {
				return fmt.Sprintf("%d (%d none)", p.Reads+p.NoLeader, p.NoLeader)
			}},
		},
		rate: "leaderships/s",
		note: func(_ Result, p PrimResult) string {
			return fmt.Sprintf("election: Leader named a leader %d times and none %d times; Observe sent %d values", p.Reads, p.NoLeader, p.Observed)
		}}

	// setKind is the locks taken as sets of names (AcquireAll), recorded
	// once per name (perName) and checked by the lock's rules, name by
	// name, on names of their own.
	setKind = holdKind{name: "set of names", prim: SetPrim,
		works: []work{{AcquireAll, (*client).acquireAll}},
		check: func(gs []Grant, _ time.Duration) Report { return CheckSets(gs) },
		cols: []column{
			{head: "sets", cell: func(_ Result, p PrimResult) any { return p.Sets }, total: func(p PrimResult) int { return p.Sets }},
			{head: "names held", cell: grantsCell, total: grantsTotal},
			{head: "violations", cell: violationsCell, total: violationsTotal},
			{head: "overlaps", cell: func(_ Result, p PrimResult) any { return p.Overlaps }},
			{head: "max overlap", cell: maxOverlapCell},
			{head: "fence resets", cell: func(_ Result, p PrimResult) any { return p.FenceResets }},
			{head: "names lost", cell: func(_ Result, p PrimResult) any { return p.Lost }},
			{head: "failures", cell: func(_ Result, p PrimResult) any { return p.Failures }},
		},
		rate: "sets/s",
		note: func(_ Result, p PrimResult) string {
			return fmt.Sprintf("sets: %d granted (pairs and triples), checked as %d holds of their names", p.Sets, p.Grants)
		}}
)

// holdKinds is the kinds table: every kind the suite takes and checks.
var holdKinds = []*holdKind{&lockKind, &lockDelayKind, &semaphoreKind, &rwMutexKind, &electionKind, &setKind}

// primKinds returns the kinds whose results are Result.Prims, in order.
func primKinds() []*holdKind {
	var ks []*holdKind
	for _, k := range holdKinds {
		if k.prim != LockPrim {
			ks = append(ks, k)
		}
	}
	return ks
}

// result returns what k's clients did in r and what its checker found,
// if they ran: for the lock, the scenario's own counts.
func (k *holdKind) result(r Result) (PrimResult, bool) {
	if k.prim == LockPrim {
		return PrimResult{Primitive: LockPrim, Report: r.Report, FenceResets: r.FenceResets, Failures: r.Failures,
			ByKind: r.ByKind, Availability: r.Availability}, true
	}
	return r.prim(k.prim)
}

// runner returns what a client of workload w does: its row's run.
func runner(w Workload) func(*client, context.Context) {
	for _, k := range holdKinds {
		for _, wk := range k.works {
			if wk.w == w && wk.run != nil {
				return wk.run
			}
		}
	}
	panic(fmt.Sprintf("chaos: workload %q has no client in the test's process", w))
}

// Primitive returns what the grants of workload w are of: its kind's.
func (w Workload) Primitive() Primitive {
	for _, k := range holdKinds {
		for _, wk := range k.works {
			if wk.w == w {
				return k.prim
			}
		}
	}
	return LockPrim
}

// The columns several kinds share.
func grantsCell(_ Result, p PrimResult) any     { return p.Grants }
func grantsTotal(p PrimResult) int              { return p.Grants }
func violationsCell(_ Result, p PrimResult) any { return len(p.Violations) }
func violationsTotal(p PrimResult) int          { return len(p.Violations) }
func mostCell(_ Result, p PrimResult) any       { return p.MostAtOnce }
func maxOverlapCell(_ Result, p PrimResult) any { return p.MaxOverlap.Round(time.Millisecond) }
