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
