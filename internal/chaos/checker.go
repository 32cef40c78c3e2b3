package chaos

import (
	"cmp"
	"fmt"
	"slices"
	"time"
)

// Kind is a kind of violation.
type Kind string

// The violations the checker, the store and the leak checks report. The
// first five are about safety and are read from the history and the
// store's writes; the others are about what a run left behind once every
// client had closed.
const (
	Overlap       Kind = "overlap"         // two holders of one name at once
	LateLoss      Kind = "late loss"       // a loss heard after Until − margin
	PastGrant     Kind = "past grant"      // a grant returned after its Until
	FenceOrder    Kind = "fence order"     // fencing tokens not increasing in grant order
	StaleWrite    Kind = "stale write"     // a fenced write the store accepted after a later holder's
	GoroutineLeak Kind = "goroutine leak"  // goroutines left running
	ConnLeak      Kind = "connection leak" // connections left open on a node
	KeyLeak       Kind = "key leak"        // keys left after the largest TTL
)

// Safety reports whether k is about mutual exclusion and its signals,
// which the documented-unsafe scenarios are expected to break, rather than
// about resources, which no scenario may leak.
func (k Kind) Safety() bool {
	switch k {
	case Overlap, LateLoss, PastGrant, FenceOrder, StaleWrite:
		return true
	}
	return false
}

// Violation is one broken rule.
type Violation struct {
	Kind   Kind
	Name   string // the lock, when there is one
	Grants []int  // the grants involved
	Detail string
}

func (v Violation) String() string {
	if v.Name == "" {
		return fmt.Sprintf("%s: %s", v.Kind, v.Detail)
	}
	return fmt.Sprintf("%s: lock %q: %s", v.Kind, v.Name, v.Detail)
}

// Report is what Check found in one history.
type Report struct {
	Grants     int
	Lost       int           // grants whose holder heard they were lost
	Overlaps   int           // pairs of grants of one name that overlapped
	MaxOverlap time.Duration // the longest of those overlaps
	Violations []Violation
}

// Check reads a history and reports every violation of the lock's promises
// in it:
//
//   - Overlap: two grants of one name whose holds, [Granted, End()],
//     intersect. A hold begins when the grant reached its caller and ends
//     when Release was called or Until passed, whichever was first.
//   - LateLoss: a loss the holder heard after Until − Margin, give or take
//     lossSlack: with a margin of 0 the loss is late as soon as it comes
//     after Until.
//   - PastGrant: a grant whose Until had passed when it was returned.
//   - FenceOrder: among the fenced grants of one name, taken in the order
//     they were returned, a token not greater than every earlier one.
//
// Times that are not known (Never) are not checked.
func Check(grants []Grant) Report {
	r := Report{Grants: len(grants)}
	byName := make(map[string][]Grant)
	for _, g := range grants {
		byName[g.Name] = append(byName[g.Name], g)
		if g.Lost != Never {
			r.Lost++
		}
		if g.FirstUntil != Never && g.Granted >= g.FirstUntil {
			r.Violations = append(r.Violations, Violation{Kind: PastGrant, Name: g.Name, Grants: []int{g.ID},
				Detail: fmt.Sprintf("%s returned %v after its Until", describe(g), g.Granted-g.FirstUntil)})
		}
		if g.Lost != Never && g.Until != Never {
			if due := g.Until - g.Margin; g.Lost > due+lossSlack(g.Margin) {
				r.Violations = append(r.Violations, Violation{Kind: LateLoss, Name: g.Name, Grants: []int{g.ID},
					Detail: fmt.Sprintf("%s heard of its loss %v after Until − margin (margin %v; %v %s Until)",
						describe(g), g.Lost-due, g.Margin, abs(g.Lost-g.Until), beforeAfter(g.Lost-g.Until))})
			}
		}
	}
	names := make([]string, 0, len(byName))
	for name := range byName {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		gs := byName[name]
		slices.SortFunc(gs, func(a, b Grant) int {
			return cmp.Or(cmp.Compare(a.Granted, b.Granted), cmp.Compare(a.ID, b.ID))
		})
		r.checkOverlaps(gs)
		r.Violations = append(r.Violations, checkFences(gs)...)
	}
	return r
}

// lossSlack is how late after Until − margin a holder may hear of a loss
// and still count as told in time: half the margin, for the holder's own
// wake-up, which a history cannot tell apart from the library's lateness.
// On a loaded machine under the race detector that wake-up alone has taken
// tens of milliseconds; a loss heard after Until is always late.
func lossSlack(margin time.Duration) time.Duration { return margin / 2 }

// checkOverlaps sweeps the grants of one name, sorted by grant time,
// keeping those whose hold has not ended yet.
func (r *Report) checkOverlaps(gs []Grant) {
	var active []Grant
	for _, g := range gs {
		end := g.End()
		kept := active[:0]
		for _, a := range active {
			if a.End() > g.Granted {
				kept = append(kept, a)
			}
		}
		active = kept
		for _, a := range active {
			d := min(a.End(), end) - g.Granted
			if d <= 0 {
				continue
			}
			r.Overlaps++
			r.MaxOverlap = max(r.MaxOverlap, d)
			r.Violations = append(r.Violations, Violation{Kind: Overlap, Name: g.Name, Grants: []int{a.ID, g.ID},
				Detail: fmt.Sprintf("%s and %s held it together for %v", describe(a), describe(g), d.Round(time.Microsecond))})
		}
		if end > g.Granted {
			active = append(active, g)
		}
	}
}

// checkFences checks the fenced grants of one name, sorted by grant time.
func checkFences(gs []Grant) []Violation {
	var (
		vs   []Violation
		last Grant
	)
	for _, g := range gs {
		if g.Fence == 0 {
			continue
		}
		if last.Fence != 0 && g.Fence <= last.Fence {
			vs = append(vs, Violation{Kind: FenceOrder, Name: g.Name, Grants: []int{last.ID, g.ID},
				Detail: fmt.Sprintf("%s has fencing token %d, not above the %d of the earlier %s",
					describe(g), g.Fence, last.Fence, describe(last))})
			continue // the highest token so far stays the bar
		}
		last = g
	}
	return vs
}

// describe names a grant without its token.
func describe(g Grant) string {
	return fmt.Sprintf("grant #%d (client %d, %s, at %v)", g.ID, g.Client, g.Workload, g.Granted.Round(time.Millisecond))
}

func abs(d time.Duration) time.Duration {
	if d < 0 {
		return -d
	}
	return d
}

func beforeAfter(d time.Duration) string {
	if d < 0 {
		return "before"
	}
	return "after"
}
