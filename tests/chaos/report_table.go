package chaos

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
)

// column is one column of a printed table: its head, its cell for a
// scenario's result r and its kind's part p of it (holdKind.result), and,
// when total is set, what a safe scenario adds to the table's total line.
type column struct {
	head  string
	cell  func(r Result, p PrimResult) any
	total func(p PrimResult) int
}

// sharedColumn is a column summed over every kind of a table.
type sharedColumn struct {
	head string
	sum  func(p PrimResult) int
}

// reportTable is one printed table: one line per scenario in which any of
// its kinds ran, with each kind's columns (holdKind.cols; a "-" for each
// where the kind did not run), then the shared columns summed over the
// kinds, then each kind's grants per second while the faults were in
// force (holdKind.rate; with that share of the baseline's in brackets when
// the run had one), then the scenario's own columns; and a total line for
// the safe scenarios.
type reportTable struct {
	kinds    []*holdKind
	shared   []sharedColumn
	scenario []column // their p is the zero PrimResult
}

// The tables: the lock's, whose numbers stay comparable with earlier
// runs; the primitives' on the same quorum; the sets of names'.
var (
	lockTable = reportTable{kinds: []*holdKind{&lockKind}, scenario: []column{
		{head: "time", cell: func(r Result, _ PrimResult) any { return r.Elapsed.Round(time.Second) }},
		{head: "faults injected", cell: func(r Result, _ PrimResult) any { return r.Faults }},
		{head: "stale writes", cell: func(r Result, _ PrimResult) any { return r.Writes }},
	}}
	primTable = reportTable{kinds: []*holdKind{&semaphoreKind, &rwMutexKind, &electionKind}, shared: []sharedColumn{
		{head: "lost", sum: func(p PrimResult) int { return p.Lost }},
		{head: "failures", sum: func(p PrimResult) int { return p.Failures }},
	}}
	setTable = reportTable{kinds: []*holdKind{&setKind}}
)

// WriteTable prints the lock's table: one line per scenario, and a total
// for the safe ones. Each line has the lock's availability: its grants per
// second while the faults were in force, that share of the baseline's
// ("-" when the run left the baseline out) and the scenario's floor for it
// ("-" for none, "(below)" when missed).
func WriteTable(w io.Writer, results []Result) error { return lockTable.write(w, results) }

// WritePrimTable prints one line per scenario whose clients took the
// primitives: for each, its grants (a read-write lock's as read and write
// holds), the most holds of one name at once (permits of a semaphore,
// readers of a read-write lock), its violations and, for the election,
// the observer's Leader reads; then, for all three, the holders told of a
// loss and the failed calls; then each primitive's grants per second; and
// a total for the safe scenarios.
func WritePrimTable(w io.Writer, results []Result) error { return primTable.write(w, results) }

// WriteSetTable prints one line per scenario whose clients took sets of
// names (AcquireAll): the sets granted, their records (one per name, which
// the checker reads name by name), the violations, overlaps and the
// longest, the fence-order breaks set apart where restarted nodes lost
// their counters, the records whose holder was told of a loss, the failed
// calls, and the sets granted per second; and a total for the safe
// scenarios. It is apart from the lock's table so that the lock's numbers
// stay comparable with runs before the sets' workload.
func WriteSetTable(w io.Writer, results []Result) error { return setTable.write(w, results) }

func (tb reportTable) write(w io.Writer, results []Result) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	head := []string{"scenario", "safe"}
	for _, k := range tb.kinds {
		for _, c := range k.cols {
			head = append(head, c.head)
		}
	}
	for _, c := range tb.shared {
		head = append(head, c.head)
	}
	for _, k := range tb.kinds {
		if k.rate != "" {
			head = append(head, k.rate)
		}
	}
	for _, c := range tb.scenario {
		head = append(head, c.head)
	}
	fmt.Fprintln(tw, strings.Join(head, "\t"))
	totals := make([]int, len(head))
	for _, r := range results {
		ps, oks := make([]PrimResult, len(tb.kinds)), make([]bool, len(tb.kinds))
		ran := false
		for i, k := range tb.kinds {
			ps[i], oks[i] = k.result(r)
			ran = ran || oks[i]
		}
		if !ran {
			continue
		}
		safe := "yes"
		if !r.Scenario.Safe {
			safe = "NO"
		}
		cells := []any{r.Scenario.Name, safe}
		for i, k := range tb.kinds {
			for _, c := range k.cols {
				if !oks[i] {
					cells = append(cells, "-")
					continue
				}
				if c.total != nil && r.Scenario.Safe {
					totals[len(cells)] += c.total(ps[i])
				}
				cells = append(cells, c.cell(r, ps[i]))
			}
		}
		for _, c := range tb.shared {
			n := 0
			for _, p := range ps {
				n += c.sum(p)
			}
			cells = append(cells, n)
		}
		for i, k := range tb.kinds {
			switch {
			case k.rate == "":
			case oks[i]:
				cells = append(cells, ps[i].Availability.rateCell())
			default:
				cells = append(cells, "-")
			}
		}
		for _, c := range tb.scenario {
			cells = append(cells, c.cell(r, PrimResult{}))
		}
		line := make([]string, len(cells))
		for i, c := range cells {
			line[i] = fmt.Sprint(c)
		}
		fmt.Fprintln(tw, strings.Join(line, "\t"))
	}
	total := make([]string, len(head))
	total[0] = "safe scenarios"
	i := 2
	for _, k := range tb.kinds {
		for _, c := range k.cols {
			if c.total != nil {
				total[i] = fmt.Sprint(totals[i])
			}
			i++
		}
	}
	fmt.Fprintln(tw, strings.Join(total, "\t"))
	return tw.Flush()
}
