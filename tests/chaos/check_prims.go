package chaos

import (
	"fmt"
	"strings"
	"time"
)

// CheckSemaphore reads a history of permits and reports, beside the
// violations every hold can show (LateLoss, PastGrant; see Check):
//
//   - TooManyHolders: an instant when more holds of one semaphore had
//     begun and not ended (End, as for a lock) than its permits (each
//     grant's Permits). Overlaps counts those instants and MaxOverlap the
//     longest, up to the first end of a hold among them.
//   - FenceOrder: a fenced permit whose token is not above that of every
//     permit returned before it was asked for. Permits held together are
//     not ordered: their tokens may come in any order.
func CheckSemaphore(grants []Grant) Report {
	return check(grants, SemaphorePrim, func(r *Report, gs []Grant) {
		r.checkPermits(gs)
		r.Violations = append(r.Violations, checkFences(gs, func(Grant) bool { return false })...)
	})
}

// checkPermits sweeps the permits of one semaphore, sorted by grant time,
// and reports each grant that left more holders than permits.
func (r *Report) checkPermits(gs []Grant) {
	var active []Grant
	for _, g := range gs {
		active = stillHeld(active, g.Granted)
		if g.End() <= g.Granted {
			continue
		}
		active = append(active, g)
		r.MostAtOnce = max(r.MostAtOnce, len(active))
		if len(active) <= g.Permits {
			continue
		}
		over := Never
		ids := make([]int, len(active))
		holders := make([]string, len(active))
		for i, a := range active {
			over = min(over, a.End())
			ids[i], holders[i] = a.ID, describe(a)
		}
		d := over - g.Granted
		r.Overlaps++
		r.MaxOverlap = max(r.MaxOverlap, d)
		r.Violations = append(r.Violations, Violation{Kind: TooManyHolders, Name: g.Name, Grants: ids,
			Detail: fmt.Sprintf("%d holders of %d permits for %v: %s", len(active), g.Permits,
				d.Round(time.Microsecond), strings.Join(holders, ", "))})
	}
}

// CheckRWMutex reads a history of read and write holds (workloads Reader
// and Writer) and reports, beside LateLoss and PastGrant (see Check):
//
//   - WriterShared: a write hold held together with any other hold of the
//     same read-write lock, a reader's or a writer's. Readers held
//     together are the point; MostAtOnce shows how many were.
//   - FenceOrder: a fenced hold whose token is not above that of every
//     hold it had to come after: every earlier one when either of the two
//     is a write hold, and any returned before it was asked for.
func CheckRWMutex(grants []Grant) Report {
	return check(grants, RWMutexPrim, func(r *Report, gs []Grant) {
		r.checkExclusion(gs, WriterShared, func(a, b Grant) bool { return a.Workload == Writer || b.Workload == Writer })
		r.Violations = append(r.Violations, checkFences(gs, func(g Grant) bool { return g.Workload == Writer })...)
	})
}

// CheckElection reads a history of leaderships and reports, beside
// LateLoss and PastGrant (see Check):
//
//   - TwoLeaders: two leaderships of one election held together.
//   - FenceOrder: a term (Fence) not above every earlier leadership's, in
//     grant order.
//   - NoTerm: a leadership without a term: an election always fences.
func CheckElection(grants []Grant) Report {
	return check(grants, ElectionPrim, func(r *Report, gs []Grant) {
		r.checkExclusion(gs, TwoLeaders, always)
		r.Violations = append(r.Violations, checkFences(gs, exclusive)...)
		for _, g := range gs {
			if g.Fence == 0 {
				r.Violations = append(r.Violations, Violation{Kind: NoTerm, Name: g.Name, Grants: []int{g.ID},
					Detail: describe(g) + " has no term"})
			}
		}
	})
}
