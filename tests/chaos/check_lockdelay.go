package chaos

import (
	"cmp"
	"fmt"
	"slices"
	"time"
)

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
