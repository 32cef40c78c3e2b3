package chaos

import (
	"math"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestPerSecond(t *testing.T) {
	at := func(granted ...time.Duration) []Grant {
		var gs []Grant
		for _, g := range granted {
			gs = append(gs, grant(1, g, g+time.Second, g+10*ms))
		}
		return gs
	}
	for _, c := range []struct {
		name     string
		grants   []Grant
		from, to time.Duration
		want     float64
	}{
		{"none", nil, 0, time.Second, 0},
		{"all within", at(0, 100*ms, 999*ms), 0, time.Second, 3},
		{"per second of the window", at(0, 100*ms, 999*ms), 0, 2 * time.Second, 1.5},
		{"from counts, to does not", at(100*ms, 200*ms, 600*ms), 100 * ms, 600 * ms, 4},
		{"before and after left out", at(50*ms, 150*ms, 250*ms, 350*ms), 100 * ms, 300 * ms, 10},
		{"an empty window", at(0, 100*ms), time.Second, time.Second, 0},
		{"a window backwards", at(0, 100*ms), time.Second, 0, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := perSecond(c.grants, c.from, c.to); math.Abs(got-c.want) > 1e-9 {
				t.Errorf("perSecond = %v, want %v", got, c.want)
			}
		})
	}
}

func TestAvailabilityAgainstTheBaseline(t *testing.T) {
	for _, c := range []struct {
		name         string
		rate, base   float64
		want         float64
		wantCompared bool
	}{
		{"as fast", 100, 100, 1, true},
		{"half", 50, 100, 0.5, true},
		{"faster", 120, 100, 1.2, true},
		{"nothing granted", 0, 100, 0, true},
		{"a baseline without grants compares nothing", 50, 0, 0, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			a := Availability{PerSecond: c.rate, OfBaseline: 7, Compared: true} // stale: overwritten
			a.against(Availability{PerSecond: c.base})
			if a.Compared != c.wantCompared || math.Abs(a.OfBaseline-c.want) > 1e-9 || a.PerSecond != c.rate {
				t.Errorf("against: %+v, want OfBaseline %v, Compared %v", a, c.want, c.wantCompared)
			}
		})
	}
}

func TestCompareAvailabilityByPrimitive(t *testing.T) {
	rate := func(p Primitive, r float64) PrimResult {
		return PrimResult{Primitive: p, Availability: Availability{PerSecond: r}}
	}
	base := Result{Availability: Availability{PerSecond: 200},
		Prims: []PrimResult{rate(SemaphorePrim, 10), rate(ElectionPrim, 0)}}
	r := Result{Availability: Availability{PerSecond: 150},
		Prims: []PrimResult{rate(SemaphorePrim, 5), rate(RWMutexPrim, 8), rate(ElectionPrim, 1)}}
	r.compareAvailability(&base)
	if a := r.Availability; !a.Compared || a.OfBaseline != 0.75 {
		t.Errorf("lock: %+v, want 0.75 of the baseline's", a)
	}
	want := []Availability{
		{PerSecond: 5, OfBaseline: 0.5, Compared: true}, // the semaphore's against the semaphore's
		{PerSecond: 8}, // no read-write lock in the baseline
		{PerSecond: 1}, // a baseline election with no grant
	}
	for i, p := range r.Prims {
		if p.Availability != want[i] {
			t.Errorf("%s: %+v, want %+v", p.Primitive, p.Availability, want[i])
		}
	}

	r.compareAvailability(nil) // a run without the baseline
	if r.Availability.Compared || r.Prims[0].Availability.Compared {
		t.Errorf("compared without a baseline: %+v, %+v", r.Availability, r.Prims[0].Availability)
	}
}

func TestBelowFloor(t *testing.T) {
	for _, c := range []struct {
		name  string
		floor float64
		a     Availability
		below bool
		cell  string
	}{
		{"no floor", 0, Availability{PerSecond: 1, OfBaseline: 0.01, Compared: true}, false, "-"},
		{"above", 0.5, Availability{PerSecond: 90, OfBaseline: 0.9, Compared: true}, false, "0.50"},
		{"at the floor", 0.5, Availability{PerSecond: 50, OfBaseline: 0.5, Compared: true}, false, "0.50"},
		{"below", 0.5, Availability{PerSecond: 12.5, OfBaseline: 0.125, Compared: true}, true, "0.50(below)"},
		{"not compared: not checked", 0.5, Availability{PerSecond: 1}, false, "0.50"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := Result{Scenario: Scenario{Name: "x", MinAvailability: c.floor}, Availability: c.a}
			msg := r.belowFloor()
			if (msg != "") != c.below {
				t.Errorf("belowFloor = %q, want below %v", msg, c.below)
			}
			if c.below && !strings.Contains(msg, "12.5 lock grants/s is 0.12 of the baseline's, below the floor of 0.50") {
				t.Errorf("belowFloor = %q, want the rate, its share and the floor", msg)
			}
			if got := r.floorCell(); got != c.cell {
				t.Errorf("floorCell = %q, want %q", got, c.cell)
			}
		})
	}
}

func TestWriteTableShowsAvailability(t *testing.T) {
	results := []Result{
		{Scenario: Scenario{Name: "baseline", Safe: true}, Report: Report{Grants: 400},
			Availability: Availability{PerSecond: 100, OfBaseline: 1, Compared: true}},
		{Scenario: Scenario{Name: "silent", Safe: true, MinAvailability: 0.5}, Report: Report{Grants: 80},
			Availability: Availability{PerSecond: 20, OfBaseline: 0.2, Compared: true}},
		{Scenario: Scenario{Name: "alone", Safe: true, MinAvailability: 0.5}, Report: Report{Grants: 90},
			Availability: Availability{PerSecond: 22.5}},
	}
	var b strings.Builder
	if err := WriteTable(&b, results); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 5 {
		t.Fatalf("%d lines, want a header, three scenarios and the total:\n%s", len(lines), b.String())
	}
	for i, want := range [][]string{
		{"scenario", "safe", "grants", "grants/s", "of", "baseline", "floor", "violations"},
		{"baseline", "yes", "400", "100.0", "1.00", "-", "0"},
		{"silent", "yes", "80", "20.0", "0.20", "0.50(below)", "0"},
		{"alone", "yes", "90", "22.5", "-", "0.50", "0"},
		{"safe", "scenarios", "570", "0"},
	} {
		if got := strings.Fields(lines[i]); len(got) < len(want) || !slices.Equal(got[:len(want)], want) {
			t.Errorf("line %d: %q, want it to begin %q", i, got, want)
		}
	}
}

func TestWritePrimTableShowsAvailability(t *testing.T) {
	sem := PrimResult{Primitive: SemaphorePrim, Report: Report{Grants: 18},
		Availability: Availability{PerSecond: 4.5, OfBaseline: 0.5, Compared: true}}
	el := PrimResult{Primitive: ElectionPrim, Report: Report{Grants: 2}, Availability: Availability{PerSecond: 0.5}}
	var b strings.Builder
	if err := WritePrimTable(&b, []Result{{Scenario: Scenario{Name: "x", Safe: true}, Prims: []PrimResult{sem, el}}}); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if got := strings.Fields(lines[0]); !slices.Equal(got[len(got)-3:], []string{"permits/s", "holds/s", "leaderships/s"}) {
		t.Errorf("header %q, want it to end with the rates", lines[0])
	}
	// The semaphore compared, no read-write lock, the election not compared.
	if got := strings.Fields(lines[1]); !slices.Equal(got[len(got)-4:], []string{"4.5", "(0.50)", "-", "0.5"}) {
		t.Errorf("line %q, want it to end with the rates", lines[1])
	}
}
