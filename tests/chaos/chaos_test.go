package chaos

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

var (
	full = flag.Bool("chaos.full", false, "run every scenario at full length (make chaos); without it, the short run of make test")
	long = flag.Bool("chaos.long", false, "run every scenario for longer still, for 100,000 grants in the safe ones (make chaos LONG=1)")
	seed = flag.Uint64("chaos.seed", 0, "seed of the fault schedules and workloads; 0 draws one, which the run prints")
)

// maxListed bounds the violations a scenario prints.
const maxListed = 10

// TestChaos runs the fault-injection suite: short by default, so that make
// test runs it on every change, at full length with -chaos.full, and
// longer still with -chaos.long. It fails on any violation in a scenario
// the README calls safe (a stale fenced write the store accepted
// included), on a resource leak anywhere, on a client process that did
// not end well, and, in the full and long runs, when an unsafe scenario
// shows no overlap (of any kind after failovers, as what a failover loses
// need not be a lock's) or the stopped processes no stale fenced write (the
// checks would be blind), or when a scenario's lock grants per second
// fall below its floor (MinAvailability) of the baseline's. One scenario
// runs with -run 'TestChaos/black' (its name, spaces as underscores),
// and reports its grants per second without a share of the baseline's;
// -run 'TestChaos/^(baseline|one_node_dead)' runs the baseline first, for
// that share.
func TestChaos(t *testing.T) {
	settings, mode := Short, "short"
	switch {
	case *long:
		settings, mode = Long, "long"
	case *full:
		settings, mode = Full, "full"
	}
	fullLength := *full || *long
	s := *seed
	if s == 0 {
		s = rand.Uint64()
	}
	brief, steady := settings.Duration, settings.Duration
	if settings.Brief > 0 {
		brief = settings.Brief
	}
	if settings.Steady > 0 {
		steady = settings.Steady
	}
	t.Logf("chaos: %s run, %d nodes, %d clients of the lock and %d of the primitives and sets (%d client processes where they run as such), %v per scenario (%v for the brief ones, %v for those of one state), seed %d (replay: -chaos.seed=%d)",
		mode, settings.Nodes, settings.Clients, len(primWorks(settings.Prims)), settings.Procs, settings.Duration, brief, steady, s, s)

	var (
		results []Result
		base    *Result // the baseline's, once it ran
	)
	for i, sc := range Scenarios() {
		t.Run(sc.Name, func(t *testing.T) {
			r := Run(t, sc, settings, s+uint64(i))
			if sc.Name == baselineName {
				b := r
				base = &b
			}
			r.compareAvailability(base) // the baseline's own: 1
			results = append(results, r)
			logAvailability(t, r, base != nil)
			if short := r.belowFloor(); short != "" {
				if fullLength {
					t.Errorf("availability: %s (seed %d)", short, s)
				} else {
					t.Logf("availability: %s; the floor fails the full and long runs only", short)
				}
			}
			t.Logf("%d grants (%d passed inside a client), %d lost, %d violations, %d overlaps (longest %v), failures %v, skips %d, fence order broken by counters lost in empty restarts %d, late losses the process's own stalls explain %d; faults: %s",
				r.Grants, r.Passes, r.Lost, len(r.Violations), r.Overlaps, r.MaxOverlap.Round(time.Millisecond),
				r.ByKind, r.Skips, r.FenceResets, r.Stalled, r.Faults)
			if sc.Procs {
				t.Logf("store: %d fenced writes, %d unfenced; %s; grants returned past Until to a process stopped meanwhile %d",
					r.Writes.Fenced, r.Writes.Unfenced, r.Writes, r.StopLate)
			}
			if sc.LockDelay > 0 {
				t.Log(lockDelayKind.note(r, PrimResult{}))
			}
			logViolations(t, r.Violations)
			for _, p := range r.Prims {
				t.Logf("%s: %d grants, most at once %d, %d lost, %d violations, %d overlaps (longest %v), failures %v, fence order broken by counters lost in empty restarts %d",
					p.Primitive, p.Grants, p.MostAtOnce, p.Lost, len(p.Violations), p.Overlaps, p.MaxOverlap.Round(time.Millisecond),
					p.ByKind, p.FenceResets)
				for _, k := range primKinds() {
					if k.prim == p.Primitive && k.note != nil {
						t.Log(k.note(r, p))
					}
				}
				logViolations(t, p.Violations)
			}
			if failed := r.Failed(); len(failed) > 0 {
				t.Errorf("%d violations that fail the suite (seed %d)", len(failed), s)
			}
			if overlaps, what := r.Overlaps, "no overlap of the lock"; fullLength && !sc.Safe {
				if sc.Replicas {
					overlaps, what = r.allOverlaps(), "no overlap of any kind"
				}
				if overlaps == 0 {
					t.Errorf("%s in %q, where one is expected: is the checker blind?", what, sc.Name)
				}
			}
			if r.Writes.Errors > 0 {
				t.Errorf("%d writes failed in the store's data Redis: the guard's verdicts on them are not known", r.Writes.Errors)
			}
			// With enough grants for a waiter to have met a release in its
			// own client (a run starved by a loaded machine may grant none).
			if sc.Name == baselineName && settings.Load.Goroutines > 1 && r.Grants >= 50 && r.Passes == 0 {
				t.Errorf("no lock passed inside a client in %q, whose clients run %d goroutines each: is hand-over on?", sc.Name, settings.Load.Goroutines)
			}
			if fullLength && sc.LockDelay > 0 && r.Delays == 0 {
				t.Errorf("no grant ran out unreleased in %q: did the stops miss the holders?", sc.Name)
			}
			if fullLength && sc.Procs && sc.LockDelay == 0 && r.Writes.FencedStale == 0 {
				t.Errorf("no stale fenced write in %q, where some are expected: did the stops miss the holders?", sc.Name)
			}
		})
	}

	var b strings.Builder
	if err := WriteTable(&b, results); err != nil {
		t.Fatal(err)
	}
	t.Logf("chaos: %s run, seed %d\n%s", mode, s, b.String())
	b.Reset()
	if err := WritePrimTable(&b, results); err != nil {
		t.Fatal(err)
	}
	t.Logf("chaos: the primitives on the same quorum, %s run, seed %d\n%s", mode, s, b.String())
	b.Reset()
	if err := WriteSetTable(&b, results); err != nil {
		t.Fatal(err)
	}
	t.Logf("chaos: sets of names (AcquireAll), %s run, seed %d\n%s", mode, s, b.String())
	safe := 0
	for _, r := range results {
		if r.Scenario.Safe {
			safe += r.Grants
		}
	}
	if fullLength && safe < wantGrants {
		// Not a failure: a busy machine makes fewer grants, not unsafe ones.
		t.Logf("chaos: only %d grants in the safe scenarios, fewer than the %d the full run aims for; was the machine busy?", safe, wantGrants)
	}
}

// logAvailability logs r's grants per second, the lock's and each
// primitive's, and their share of the baseline's when the run has one.
func logAvailability(t *testing.T, r Result, baseline bool) {
	t.Helper()
	parts := []string{fmt.Sprintf("lock %s", r.Availability.rateCell())}
	for _, p := range r.Prims {
		parts = append(parts, fmt.Sprintf("%s %s", p.Primitive, p.Availability.rateCell()))
	}
	note := "(share of the baseline's in brackets)"
	if !baseline {
		note = "(no baseline in this run: no share of it"
		if r.Scenario.MinAvailability > 0 {
			note += fmt.Sprintf(", and the floor of %.2f is not checked", r.Scenario.MinAvailability)
		}
		note += ")"
	}
	t.Logf("availability over %v: grants/s %s %s", r.Ran.Round(time.Millisecond), strings.Join(parts, ", "), note)
}

// logViolations logs the first maxListed of vs.
func logViolations(t *testing.T, vs []Violation) {
	t.Helper()
	for i, v := range vs {
		if i == maxListed {
			t.Logf("... and %d more", len(vs)-maxListed)
			return
		}
		t.Logf("  %v", v)
	}
}

// wantGrants is how many grants the full run aims for in its safe
// scenarios, so that a zero means something.
const wantGrants = 10000
