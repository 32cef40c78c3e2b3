package chaos

import (
	"slices"
	"strings"
	"testing"
)

func TestKindsTable(t *testing.T) {
	for w, want := range map[Workload]Primitive{
		Acquire: LockPrim, Do: LockPrim, KeepAlive: LockPrim, DoOrSkip: LockPrim, Holdout: LockPrim, Stopped: LockPrim,
		AcquireAll: SetPrim, Permit: SemaphorePrim, Reader: RWMutexPrim, Writer: RWMutexPrim,
		Leader: ElectionPrim, Observer: ElectionPrim,
	} {
		if got := w.Primitive(); got != want {
			t.Errorf("%s.Primitive() = %q, want %q", w, got, want)
		}
		if w != Stopped && runner(w) == nil {
			t.Errorf("no client runs %s", w)
		}
	}
	var prims []Primitive
	for _, k := range primKinds() {
		prims = append(prims, k.prim)
	}
	if want := []Primitive{SemaphorePrim, RWMutexPrim, ElectionPrim, SetPrim}; !slices.Equal(prims, want) {
		t.Errorf("the primitives' kinds %v, want %v (the order results list them)", prims, want)
	}
	for _, k := range holdKinds {
		if k.check == nil || len(k.works) == 0 {
			t.Errorf("kind %s without a checker or a workload", k.name)
		}
	}
}

// Every line of every table has a cell under each head.
func TestTablesHaveAHeadPerCell(t *testing.T) {
	prims := []PrimResult{
		{Primitive: SemaphorePrim}, {Primitive: RWMutexPrim}, {Primitive: ElectionPrim}, {Primitive: SetPrim, Sets: 1},
	}
	results := []Result{{Scenario: Scenario{Name: "x", Safe: true}, Faults: "none", Prims: prims}}
	for name, write := range map[string]func(*strings.Builder) error{
		"lock": func(b *strings.Builder) error { return WriteTable(b, results) },
		"prim": func(b *strings.Builder) error { return WritePrimTable(b, results) },
		"set":  func(b *strings.Builder) error { return WriteSetTable(b, results) },
	} {
		var b strings.Builder
		if err := write(&b); err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(b.String(), "\n")
		head := strings.Split(strings.TrimSpace(lines[0]), "  ")
		heads := 0
		for _, h := range head {
			if strings.TrimSpace(h) != "" {
				heads++
			}
		}
		// the line's cells: the scenario's fields, one per column
		cells := 0
		for _, c := range strings.Split(strings.TrimSpace(lines[1]), "  ") {
			if strings.TrimSpace(c) != "" {
				cells++
			}
		}
		if heads != cells {
			t.Errorf("%s table: %d heads, %d cells:\n%s", name, heads, cells, b.String())
		}
		t.Logf("%s table:\n%s", name, b.String())
	}
}
