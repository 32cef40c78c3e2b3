package chaos

import (
	"fmt"
	"io"
	"text/tabwriter"
	"time"
)

// WriteTable prints one line per scenario, and a total for the safe ones.
func WriteTable(w io.Writer, results []Result) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "scenario\tsafe\tgrants\tviolations\toverlaps\tmax overlap\tlost\tfailures\tskips\ttime\tfaults injected\tstale writes")
	var grants, violations int
	for _, r := range results {
		safe := "yes"
		if !r.Scenario.Safe {
			safe = "NO"
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%v\t%d\t%d\t%d\t%v\t%s\t%s\n",
			r.Scenario.Name, safe, r.Grants, len(r.Violations), r.Overlaps, r.MaxOverlap.Round(time.Millisecond),
			r.Lost, r.Failures, r.Skips, r.Elapsed.Round(time.Second), r.Faults, r.Writes)
		if r.Scenario.Safe {
			grants += r.Grants
			violations += len(r.Violations)
		}
	}
	fmt.Fprintf(tw, "safe scenarios\t\t%d\t%d\t\t\t\t\t\t\t\t\n", grants, violations)
	return tw.Flush()
}

// WritePrimTable prints one line per scenario whose clients took the
// primitives: for each, its grants, the most holds of one name at once
// (permits of a semaphore, readers of a read-write lock), its violations
// and its holders told of a loss; then a total for the safe scenarios.
func WritePrimTable(w io.Writer, results []Result) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "scenario\tsafe\tpermits\tmost\tviolations\tread/write holds\tmost\tviolations\tleaderships\tviolations\tlost\tfailures\tleader reads")
	var grants, violations [3]int // of the safe scenarios, by primitive
	for _, r := range results {
		if len(r.Prims) == 0 {
			continue
		}
		safe := "yes"
		if !r.Scenario.Safe {
			safe = "NO"
		}
		var cells []any
		lost, failures, reads := 0, 0, ""
		for i, pc := range primCheckers {
			p, ok := r.prim(pc.prim)
			switch {
			case !ok:
				cells = append(cells, "-", "-", "-")
			case pc.prim == ElectionPrim:
				cells = append(cells, p.Grants, len(p.Violations))
				reads = fmt.Sprintf("%d (%d none)", p.Reads+p.NoLeader, p.NoLeader)
			default:
				cells = append(cells, p.Grants, p.MostAtOnce, len(p.Violations))
			}
			if r.Scenario.Safe {
				grants[i] += p.Grants
				violations[i] += len(p.Violations)
			}
			lost += p.Lost
			failures += p.Failures
		}
		fmt.Fprintf(tw, "%s\t%s\t%v\t%v\t%v\t%v\t%v\t%v\t%v\t%v\t%d\t%d\t%s\n",
			append(append([]any{r.Scenario.Name, safe}, cells...), lost, failures, reads)...)
	}
	fmt.Fprintf(tw, "safe scenarios\t\t%d\t\t%d\t%d\t\t%d\t%d\t%d\t\t\t\n",
		grants[0], violations[0], grants[1], violations[1], grants[2], violations[2])
	return tw.Flush()
}
