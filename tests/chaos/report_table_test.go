package chaos

import (
	"slices"
	"strings"
	"testing"
)

func TestWriteSetTable(t *testing.T) {
	set := func(sets, records int, vs ...Kind) PrimResult {
		p := PrimResult{Primitive: SetPrim, Sets: sets, Report: Report{Grants: records}, Failures: 2,
			Availability: Availability{PerSecond: 12.5, OfBaseline: 0.5, Compared: true}}
		for _, k := range vs {
			p.Violations = append(p.Violations, Violation{Kind: k})
		}
		return p
	}
	sem := PrimResult{Primitive: SemaphorePrim, Report: Report{Grants: 9}}
	results := []Result{
		{Scenario: Scenario{Name: "baseline", Safe: true}, Prims: []PrimResult{sem, set(100, 250)}},
		{Scenario: Scenario{Name: "processes", Safe: true}}, // no sets: no line
		{Scenario: Scenario{Name: "restarts", Safe: true}, Prims: []PrimResult{func() PrimResult {
			p := set(40, 90)
			p.FenceResets, p.Lost = 3, 4
			return p
		}()}},
		{Scenario: Scenario{Name: "unsafe"}, Prims: []PrimResult{set(10, 25, Overlap)}},
	}
	var b strings.Builder
	if err := WriteSetTable(&b, results); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 5 {
		t.Fatalf("%d lines, want a header, three scenarios and the total:\n%s", len(lines), b.String())
	}
	for i, want := range [][]string{
		{"scenario", "safe", "sets", "names", "held", "violations", "overlaps", "max", "overlap", "fence", "resets", "names", "lost", "failures", "sets/s"},
		{"baseline", "yes", "100", "250", "0", "0", "0s", "0", "0", "2", "12.5", "(0.50)"},
		{"restarts", "yes", "40", "90", "0", "0", "0s", "3", "4", "2", "12.5", "(0.50)"},
		{"unsafe", "NO", "10", "25", "1"},
		{"safe", "scenarios", "140", "340", "0"}, // the unsafe one's overlap left out
	} {
		if got := strings.Fields(lines[i]); len(got) < len(want) || !slices.Equal(got[:len(want)], want) {
			t.Errorf("line %d: %q, want it to begin %q", i, got, want)
		}
	}
}
