package chaos

import (
	"fmt"
	"io"
	"slices"
	"text/tabwriter"
	"time"
)

// WriteTable prints one line per scenario, and a total for the safe ones.
// Each line has the lock's availability: its grants per second while the
// faults were in force, that share of the baseline's ("-" when the run
// left the baseline out) and the scenario's floor for it ("-" for none,
// "(below)" when missed).
func WriteTable(w io.Writer, results []Result) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "scenario\tsafe\tgrants\tgrants/s\tof baseline\tfloor\tviolations\toverlaps\tmax overlap\tlost\tfailures\tskips\ttime\tfaults injected\tstale writes")
	var grants, violations int
	for _, r := range results {
		safe := "yes"
		if !r.Scenario.Safe {
			safe = "NO"
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%.1f\t%s\t%s\t%d\t%d\t%v\t%d\t%d\t%d\t%d\t%v\t%s\t%s\n",
			r.Scenario.Name, safe, r.Grants, r.Availability.PerSecond, r.Availability.ofBaselineCell(), r.floorCell(),
			len(r.Violations), r.Overlaps, r.MaxOverlap.Round(time.Millisecond),
			r.Lost, r.Passes, r.Failures, r.Skips, r.Elapsed.Round(time.Second), r.Faults, r.Writes)
		if r.Scenario.Safe {
			grants += r.Grants
			violations += len(r.Violations)
		}
	}
	fmt.Fprintf(tw, "safe scenarios\t\t%d\t\t\t\t%d\t\t\t\t\t\t\t\t\t\n", grants, violations)
	return tw.Flush()
}

// WritePrimTable prints one line per scenario whose clients took the
// primitives: for each, its grants (a read-write lock's as read and write
// holds), the most holds of one name at once (permits of a semaphore,
// readers of a read-write lock) and its violations; then, for all three,
// the holders told of a loss, the failed calls and the observer's Leader
// reads; then each primitive's grants per second while the faults were in
// force, with that share of the baseline's in brackets when the run had
// one; and a total for the safe scenarios.
func WritePrimTable(w io.Writer, results []Result) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "scenario\tsafe\tpermits\tmost\tviolations\treads\twrites\tmost\tviolations\tleaderships\tviolations\tlost\tfailures\tleader reads\tpermits/s\tholds/s\tleaderships/s")
	var grants, violations [len(primTablePrims)]int // of the safe scenarios, by primitive
	writes := 0
	for _, r := range results {
		if !slices.ContainsFunc(r.Prims, inPrimTable) {
			continue
		}
		safe := "yes"
		if !r.Scenario.Safe {
			safe = "NO"
		}
		var cells, rates []any
		lost, failures, reads := 0, 0, ""
		for i, prim := range primTablePrims {
			p, ok := r.prim(prim)
			rate := "-"
			if ok {
				rate = p.Availability.rateCell()
			}
			rates = append(rates, rate)
			switch {
			case !ok: // as many cells as its columns
				for range map[Primitive]int{SemaphorePrim: 3, RWMutexPrim: 4, ElectionPrim: 2}[prim] {
					cells = append(cells, "-")
				}
			case prim == ElectionPrim:
				cells = append(cells, p.Grants, len(p.Violations))
				reads = fmt.Sprintf("%d (%d none)", p.Reads+p.NoLeader, p.NoLeader)
			case prim == RWMutexPrim:
				cells = append(cells, p.Grants-p.Writes, p.Writes, p.MostAtOnce, len(p.Violations))
			default:
				cells = append(cells, p.Grants, p.MostAtOnce, len(p.Violations))
			}
			if r.Scenario.Safe {
				grants[i] += p.Grants
				violations[i] += len(p.Violations)
				writes += p.Writes
			}
			lost += p.Lost
			failures += p.Failures
		}
		fmt.Fprintf(tw, "%s\t%s\t%v\t%v\t%v\t%v\t%v\t%v\t%v\t%v\t%v\t%d\t%d\t%s\t%s\t%s\t%s\n",
			append(append(append([]any{r.Scenario.Name, safe}, cells...), lost, failures, reads), rates...)...)
	}
	fmt.Fprintf(tw, "safe scenarios\t\t%d\t\t%d\t%d\t%d\t\t%d\t%d\t%d\t\t\t\t\t\t\n",
		grants[0], violations[0], grants[1]-writes, writes, violations[1], grants[2], violations[2])
	return tw.Flush()
}

// primTablePrims are the primitives of WritePrimTable, in its columns'
// order; the sets have a table of their own (WriteSetTable).
var primTablePrims = [...]Primitive{SemaphorePrim, RWMutexPrim, ElectionPrim}

// inPrimTable reports whether p has columns in WritePrimTable.
func inPrimTable(p PrimResult) bool { return slices.Contains(primTablePrims[:], p.Primitive) }
