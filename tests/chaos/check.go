package chaos

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Kind is a kind of violation.
type Kind string

// The violations the checkers, the store and the leak checks report. The
// first nine are about safety and are read from the history and the
// store's writes; the others are broken promises that no fault excuses:
// what a run left behind once every client had closed, and an Observe
// stream that repeated itself.
const (
	Overlap        Kind = "overlap"          // two holders of one lock at once
	LateLoss       Kind = "late loss"        // a loss heard after Until − margin
	PastGrant      Kind = "past grant"       // a grant returned after its Until
	FenceOrder     Kind = "fence order"      // fencing tokens (terms) not increasing in grant order
	StaleWrite     Kind = "stale write"      // a fenced write the store accepted after a later holder's
	TooManyHolders Kind = "too many holders" // more holders of a semaphore at once than its permits
	WriterShared   Kind = "writer shared"    // a write hold of a read-write lock held with another hold
	TwoLeaders     Kind = "two leaders"      // two leaderships of one election at once
	NoTerm         Kind = "no term"          // a leadership without a term (Fence 0)
	GoroutineLeak  Kind = "goroutine leak"   // goroutines left running
	ConnLeak       Kind = "connection leak"  // connections left open on a node
	KeyLeak        Kind = "key leak"         // keys left after the largest TTL
	ObserveRepeat  Kind = "observe repeat"   // an Observe stream that sent one value twice in a row
	DelayBroken    Kind = "delay broken"     // a grant within the lock-delay of a lock that ran out unreleased
)

// Safety reports whether k is about mutual exclusion and its signals,
// which the documented-unsafe scenarios are expected to break, rather than
// about resources, which no scenario may leak, or Observe's own promise.
func (k Kind) Safety() bool {
	switch k {
	case Overlap, LateLoss, PastGrant, FenceOrder, StaleWrite, TooManyHolders, WriterShared, TwoLeaders, NoTerm, DelayBroken:
		return true
	}
	return false
}

// Violation is one broken rule.
type Violation struct {
	Kind   Kind
	Name   string    // the lock or primitive, when there is one
	Of     Primitive // what Name names; "" for a lock
	Grants []int     // the grants involved
	Detail string
}

func (v Violation) String() string {
	if v.Name == "" {
		return fmt.Sprintf("%s: %s", v.Kind, v.Detail)
	}
	return fmt.Sprintf("%s: %s %q: %s", v.Kind, cmp.Or(v.Of, LockPrim), v.Name, v.Detail)
}

// Report is what Check found in one history.
type Report struct {
	Grants     int
	Lost       int           // grants whose holder heard they were lost
	Passes     int           // grants passed from a holder of the same client (the holder's token), not granted by the servers
	Overlaps   int           // pairs of grants of one name that overlapped (instants over the permits, for a semaphore)
	MaxOverlap time.Duration // the longest of those overlaps
	MostAtOnce int           // the most holds of one name at once: 1 for a lock that kept its promise
	Expired    int           // grants that ran out unreleased (CheckLockDelay's; 0 from the others)
	Violations []Violation
}

// Check reads a history of lock grants and reports every violation of the
// lock's promises in it:
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
// Times that are not known (Never) are not checked. The primitives have
// checkers of their own (CheckSemaphore, CheckRWMutex, CheckElection);
// sets of names are checked by these rules, name by name (CheckSets).
func Check(grants []Grant) Report {
	return check(grants, "", lockRules)
}

// lockRules are the per-name checks of a lock's grants: Overlap and
// FenceOrder, every hold excluding every other. Check applies them to
// locks of one name, CheckSets to the records of sets, name by name.
func lockRules(r *Report, gs []Grant) {
	r.checkExclusion(gs, Overlap, always)
	r.Violations = append(r.Violations, checkFences(gs, exclusive)...)
}

// check runs the checks that every hold shares, a lock's or a
// primitive's (LateLoss, PastGrant), and then perName on the grants of
// each name sorted by grant time; of names what they are of in the
// violations ("" for a lock).
func check(grants []Grant, of Primitive, perName func(r *Report, gs []Grant)) Report {
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
		r.Passes += passes(gs)
		perName(&r, gs)
	}
	for i := range r.Violations {
		r.Violations[i].Of = of
	}
	return r
}

// passes counts the grants of gs, sorted by grant time, that carry the
// token of an earlier grant: a lock passed inside its client keeps the
// token the servers hold, while each grant of the servers draws its own.
func passes(gs []Grant) int {
	n := 0
	seen := make(map[string]bool, len(gs))
	for _, g := range gs {
		if g.Token == "" {
			continue
		}
		if seen[g.Token] {
			n++
		}
		seen[g.Token] = true
	}
	return n
}

// lossSlack is how late after Until − margin a holder may hear of a loss
// and still count as told in time: half the margin, for the holder's own
// wake-up, which a history cannot tell apart from the library's lateness.
// On a loaded machine under the race detector that wake-up alone has taken
// tens of milliseconds; a loss heard after Until is always late.
func lossSlack(margin time.Duration) time.Duration { return margin / 2 }

// always is the conflict rule of holds that exclude every other hold of
// their name: a lock's, a leader's.
func always(Grant, Grant) bool { return true }

// exclusive tells the holds that exclude every other hold of their name;
// every hold of a lock or a leadership does.
func exclusive(Grant) bool { return true }

// stillHeld keeps the holds of active that have not ended at t.
func stillHeld(active []Grant, t time.Duration) []Grant {
	kept := active[:0]
	for _, a := range active {
		if a.End() > t {
			kept = append(kept, a)
		}
	}
	return kept
}

// checkExclusion sweeps the grants of one name, sorted by grant time,
// keeping those whose hold has not ended yet, and reports as kind every
// two that conflict and were held together.
func (r *Report) checkExclusion(gs []Grant, kind Kind, conflict func(a, b Grant) bool) {
	var active []Grant
	for _, g := range gs {
		end := g.End()
		active = stillHeld(active, g.Granted)
		for _, a := range active {
			d := min(a.End(), end) - g.Granted
			if d <= 0 || !conflict(a, g) {
				continue
			}
			r.Overlaps++
			r.MaxOverlap = max(r.MaxOverlap, d)
			r.Violations = append(r.Violations, Violation{Kind: kind, Name: g.Name, Grants: []int{a.ID, g.ID},
				Detail: fmt.Sprintf("%s and %s held it together for %v", describe(a), describe(g), d.Round(time.Microsecond))})
		}
		if end > g.Granted {
			active = append(active, g)
			r.MostAtOnce = max(r.MostAtOnce, len(active))
		}
	}
}

// checkFences checks the fencing tokens of the grants of one name, sorted
// by grant time. A grant's token must be greater than that of every grant
// it had to come after: every earlier one where either of the two is
// exclusive (as its hold excluded the other's), and, for any two, every one
// returned before the later was asked for (its token was on a quorum by
// then, and the later one's write round reached a server of that quorum).
// Each grant that breaks this is reported once, against the highest token
// it had to be above.
func checkFences(gs []Grant, exclusive func(Grant) bool) []Violation {
	// best[i] is the grant of highest token among gs[:i], bestExcl[i]
	// among the exclusive ones of gs[:i]; -1 for none.
	best, bestExcl := make([]int, len(gs)+1), make([]int, len(gs)+1)
	best[0], bestExcl[0] = -1, -1
	higher := func(i, j int) int {
		if j >= 0 && gs[j].Fence != 0 && (i < 0 || gs[j].Fence > gs[i].Fence) {
			return j
		}
		return i
	}
	for i, g := range gs {
		best[i+1], bestExcl[i+1] = higher(best[i], i), bestExcl[i]
		if exclusive(g) {
			bestExcl[i+1] = higher(bestExcl[i], i)
		}
	}
	var vs []Violation
	for j, g := range gs {
		if g.Fence == 0 {
			continue
		}
		bar := bestExcl[j]
		if exclusive(g) {
			bar = best[j]
		}
		asked, _ := slices.BinarySearchFunc(gs, g.Asked, func(a Grant, t time.Duration) int { return cmp.Compare(a.Granted, t) })
		bar = higher(bar, best[min(asked, j)])
		if bar < 0 || g.Fence > gs[bar].Fence {
			continue
		}
		last := gs[bar]
		vs = append(vs, Violation{Kind: FenceOrder, Name: g.Name, Grants: []int{last.ID, g.ID},
			Detail: fmt.Sprintf("%s has fencing token %d, not above the %d of the earlier %s",
				describe(g), g.Fence, last.Fence, describe(last))})
	}
	return vs
}

// describe names a grant without its token, and a set's record with
// every name of its set.
func describe(g Grant) string {
	work := string(g.Workload)
	if len(g.Set) > 0 {
		work += " " + strings.Join(g.Set, "+")
	}
	return fmt.Sprintf("grant #%d (client %d, %s, at %v)", g.ID, g.Client, work, g.Granted.Round(time.Millisecond))
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
