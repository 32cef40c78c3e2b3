package chaos

import (
	"cmp"
	"fmt"
	"slices"
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

// CheckSets reads the records of set grants (AcquireAll), one per name of
// each set (perName), and reports what Check reports of a lock's grants,
// name by name and by the same rules (lockRules): two holds of one name
// at once, whether by two sets or by one set twice (Overlap); a fenced
// record whose name's token is not above every earlier record's of that
// name, in grant order (FenceOrder); a loss heard too late (LateLoss); a
// grant returned after its Until (PastGrant). Its Grants counts records,
// not sets: a set of three names is three.
func CheckSets(grants []Grant) Report {
	return check(grants, SetPrim, lockRules)
}

// delaySlack is what CheckLockDelay allows for the histories of several
// processes put on one clock (their zeros are read, not shared).
const delaySlack = time.Millisecond

// CheckLockDelay reads a history of lock grants taken with a lock-delay
// of d (redlock.WithLockDelay) and reports, as DelayBroken, every grant of
// a name returned after the Until of an earlier grant that ran out
// without a release, and before both that Until plus d and the release
// its holder called late (a release, even late, ends the delay). The
// servers' keys outlive the holder's Until, so the bound holds whatever
// the timing; a grant before that Until is an Overlap, Check's to report.
// It also returns how many grants ran out unreleased.
func CheckLockDelay(grants []Grant, d time.Duration) (expired int, vs []Violation) {
	byName := make(map[string][]Grant)
	for _, g := range grants {
		byName[g.Name] = append(byName[g.Name], g)
	}
	names := make([]string, 0, len(byName))
	for n := range byName {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, name := range names {
		gs := byName[name]
		slices.SortFunc(gs, func(a, b Grant) int { return cmp.Compare(a.Granted, b.Granted) })
		for i, g := range gs {
			if g.Until == Never || g.Released <= g.Until {
				continue // released in time, or not known to have run out
			}
			expired++
			free := min(g.Until+d, g.Released) // Released is Never when it never came
			for _, n := range gs[i+1:] {
				if n.Granted <= g.Until || n.Granted+delaySlack >= free {
					continue
				}
				vs = append(vs, Violation{Kind: DelayBroken, Name: name, Grants: []int{g.ID, n.ID},
					Detail: fmt.Sprintf("grant %d (client %d) came %v after grant %d (client %d) ran out unreleased, within its lock-delay of %v",
						n.ID, n.Client, n.Granted-g.Until, g.ID, g.Client, d)})
			}
		}
	}
	return expired, vs
}

// kindCount says how many of vs are of kind k.
func kindCount(vs []Violation, k Kind) string {
	n := 0
	for _, v := range vs {
		if v.Kind == k {
			n++
		}
	}
	return fmt.Sprint(n)
}
