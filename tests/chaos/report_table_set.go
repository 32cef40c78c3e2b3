package chaos

import (
	"fmt"
	"io"
	"text/tabwriter"
	"time"
)

// WriteSetTable prints one line per scenario whose clients took sets of
// names (AcquireAll): the sets granted, their records (one per name, which
// the checker reads name by name), the violations, overlaps and the
// longest, the fence-order breaks set apart where restarted nodes lost
// their counters, the records whose holder was told of a loss, the
// failed calls, and the
// sets granted per second while the faults were in force, with that share
// of the baseline's in brackets when the run had one; and a total for the
// safe scenarios. It is apart from the lock's table so that the lock's
// numbers stay comparable with runs before the sets' workload.
func WriteSetTable(w io.Writer, results []Result) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "scenario\tsafe\tsets\tnames held\tviolations\toverlaps\tmax overlap\tfence resets\tnames lost\tfailures\tsets/s")
	var sets, records, violations int // of the safe scenarios
	for _, r := range results {
		p, ok := r.prim(SetPrim)
		if !ok {
			continue
		}
		safe := "yes"
		if !r.Scenario.Safe {
			safe = "NO"
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\t%v\t%d\t%d\t%d\t%s\n",
			r.Scenario.Name, safe, p.Sets, p.Grants, len(p.Violations), p.Overlaps, p.MaxOverlap.Round(time.Millisecond),
			p.FenceResets, p.Lost, p.Failures, p.Availability.rateCell())
		if r.Scenario.Safe {
			sets += p.Sets
			records += p.Grants
			violations += len(p.Violations)
		}
	}
	fmt.Fprintf(tw, "safe scenarios\t\t%d\t%d\t%d\t\t\t\t\t\t\n", sets, records, violations)
	return tw.Flush()
}
