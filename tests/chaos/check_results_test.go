package chaos

import (
	"slices"
	"strings"
	"testing"
)

func TestPrimWorks(t *testing.T) {
	got := primWorks(map[Workload]int{Leader: 2, Permit: 1, Observer: 1})
	if want := []Workload{Permit, Leader, Leader, Observer}; !slices.Equal(got, want) {
		t.Fatalf("primWorks = %v, want %v", got, want)
	}
	for _, w := range got {
		if w.Primitive() == LockPrim {
			t.Errorf("%s counts as the lock's", w)
		}
	}
}

func TestCheckPrims(t *testing.T) {
	clients := []*client{
		{id: 0, work: Acquire, failures: map[string]int{"acquire: not acquired": 5}},
		{id: 1, work: Permit, failures: map[string]int{"permit: not acquired": 2}},
		{id: 2, work: Permit, failures: map[string]int{"permit: not acquired": 1}},
		{id: 3, work: Leader, failures: map[string]int{}},
		{id: 4, work: Observer, failures: map[string]int{"leader: timed out": 1}, reads: 7, noLeader: 2, changes: 4,
			repeats: []string{"client3.1"}},
	}
	byPrim := map[Primitive][]Grant{
		SemaphorePrim: history(
			with(permit3(1, 10*ms, 1000*ms, 30*ms), fenced(5, 0)),
			with(permit3(2, 40*ms, 1040*ms, 300*ms), fenced(5, 35*ms)),
		),
	}
	for _, lost := range []bool{false, true} {
		rs := checkPrims(byPrim, clients, lost)
		if len(rs) != 2 || rs[0].Primitive != SemaphorePrim || rs[1].Primitive != ElectionPrim {
			t.Fatalf("results for %v, want the semaphore's and the election's (no read-write clients ran)", rs)
		}
		sem, el := rs[0], rs[1]
		if sem.Clients != 2 || sem.Failures != 3 || !slices.Equal(sem.ByKind, []string{"permit: not acquired 3"}) {
			t.Errorf("semaphore: %d clients, failures %d %v; want 2 clients, 3 not acquired", sem.Clients, sem.Failures, sem.ByKind)
		}
		if lost != (sem.FenceResets == 1) || lost == (len(sem.Violations) == 1) {
			t.Errorf("counters lost %v: %d fence resets, violations %v", lost, sem.FenceResets, sem.Violations)
		}
		if el.Clients != 2 || el.Reads != 7 || el.NoLeader != 2 || el.Observed != 4 || el.Failures != 1 {
			t.Errorf("election: %+v", el)
		}
		if len(el.Violations) != 1 || el.Violations[0].Kind != ObserveRepeat || el.Violations[0].Kind.Safety() ||
			!strings.Contains(el.Violations[0].String(), "client3.1") {
			t.Errorf("election violations %v, want Observe's repeat, which no scenario excuses", el.Violations)
		}
	}
}

func TestFailedCountsThePrimitives(t *testing.T) {
	r := Result{Prims: []PrimResult{
		{Primitive: SemaphorePrim, Report: Report{Violations: []Violation{{Kind: TooManyHolders}}}},
		{Primitive: ElectionPrim, Report: Report{Violations: []Violation{{Kind: ObserveRepeat}}}},
	}}
	r.Report.Violations = []Violation{{Kind: KeyLeak}}
	r.Scenario.Safe = true
	if got := kinds(Report{Violations: r.Failed()}); !slices.Equal(got, []Kind{KeyLeak, TooManyHolders, ObserveRepeat}) {
		t.Errorf("safe scenario fails on %v", got)
	}
	r.Scenario.Safe = false
	if got := kinds(Report{Violations: r.Failed()}); !slices.Equal(got, []Kind{KeyLeak, ObserveRepeat}) {
		t.Errorf("unsafe scenario fails on %v, want only what no scenario excuses", got)
	}
}

func TestWritePrimTable(t *testing.T) {
	sem := PrimResult{Primitive: SemaphorePrim, Report: Report{Grants: 120, MostAtOnce: 3}}
	rw := PrimResult{Primitive: RWMutexPrim, Report: Report{Grants: 80, MostAtOnce: 4, Lost: 1}, Writes: 30}
	el := PrimResult{Primitive: ElectionPrim, Report: Report{Grants: 9, Violations: []Violation{{Kind: TwoLeaders}}},
		Reads: 30, NoLeader: 5, Failures: 2}
	results := []Result{
		{Scenario: Scenario{Name: "baseline", Safe: true}, Prims: []PrimResult{sem, rw, el}},
		{Scenario: Scenario{Name: "processes", Safe: true}}, // no primitives: no line
		{Scenario: Scenario{Name: "unsafe"}, Prims: []PrimResult{sem, rw, el}},
	}
	var b strings.Builder
	if err := WritePrimTable(&b, results); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 4 {
		t.Fatalf("%d lines, want a header, two scenarios and the total:\n%s", len(lines), b.String())
	}
	for i, want := range [][]string{
		{"baseline", "yes", "120", "3", "0", "50", "30", "4", "0", "9", "1", "35", "(5", "none)", "1", "2"},
		{"unsafe", "NO", "120"},
		{"safe", "scenarios", "120", "0", "50", "30", "0", "9", "1"},
	} {
		if got := strings.Fields(lines[i+1]); !slices.Equal(got[:len(want)], want) {
			t.Errorf("line %d: %q, want it to begin %q", i+1, got, want)
		}
	}
}

func TestCheckPrimsCountsSets(t *testing.T) {
	clients := []*client{
		{id: 0, work: Acquire, failures: map[string]int{"acquire: not acquired": 5}},
		{id: 1, work: AcquireAll, failures: map[string]int{"acquireall: not acquired": 2}},
		{id: 2, work: AcquireAll, failures: map[string]int{"acquireall: timed out": 1}},
	}
	byPrim := map[Primitive][]Grant{SetPrim: sets(
		setOf(1, []string{"a", "b", "c"}, 0, 1000*ms, 100*ms, 1, 1, 1),
		setOf(2, []string{"c", "d"}, 50*ms, 1050*ms, 200*ms, 1, 1), // c held twice, its fence repeated
	)}
	for _, lost := range []bool{false, true} {
		rs := checkPrims(byPrim, clients, lost)
		if len(rs) != 1 || rs[0].Primitive != SetPrim {
			t.Fatalf("results for %v, want the sets' alone", rs)
		}
		r := rs[0]
		if r.Sets != 2 || r.Grants != 5 || r.Clients != 2 || r.Failures != 3 {
			t.Errorf("%d sets, %d records, %d clients, %d failures; want 2 sets of 5 names, 2 clients, 3 failures", r.Sets, r.Grants, r.Clients, r.Failures)
		}
		want := []Kind{Overlap, FenceOrder}
		if lost {
			want = []Kind{Overlap} // the fence set apart, as the lock's
		}
		if got := kinds(r.Report); !slices.Equal(got, want) || (r.FenceResets == 1) != lost {
			t.Errorf("counters lost %v: violations %v and %d fence resets, want %v", lost, got, r.FenceResets, want)
		}
	}
}

func TestWritePrimTableLeavesTheSetsOut(t *testing.T) {
	set := PrimResult{Primitive: SetPrim, Report: Report{Grants: 30}, Sets: 12}
	sem := PrimResult{Primitive: SemaphorePrim, Report: Report{Grants: 7}}
	var b strings.Builder
	err := WritePrimTable(&b, []Result{
		{Scenario: Scenario{Name: "sets only", Safe: true}, Prims: []PrimResult{set}},
		{Scenario: Scenario{Name: "both", Safe: true}, Prims: []PrimResult{sem, set}},
	})
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[1], "both ") {
		t.Fatalf("want a header, the scenario with a semaphore and the total:\n%s", b.String())
	}
	if got := strings.Fields(lines[2]); !slices.Equal(got[:3], []string{"safe", "scenarios", "7"}) {
		t.Errorf("total %q, want the semaphore's 7 permits, no set in it", got)
	}
}
