package chaos

import (
	"fmt"
	"time"
)

// Availability is how many grants a scenario's clients of one primitive
// got per second while its faults were in force, and how that compares
// with the baseline's (the healthy scenario) of the same run: a failed
// minority of the nodes should cost nearly nothing, and a fault that
// keeps the safety and halves the grants is a regression the violations
// do not show.
type Availability struct {
	PerSecond float64
	// OfBaseline is PerSecond over the baseline's PerSecond; meaningful
	// only when Compared, which needs a baseline with grants in the run.
	OfBaseline float64
	Compared   bool
}

// baselineName is the healthy scenario, whose availability the others'
// is compared with.
const baselineName = "baseline"

// perSecond counts the grants returned to their holders within [from,
// to), on the history's clock, per second of that window; 0 for a window
// that is empty. A set counts once, not once per name (Grant.leads).
func perSecond(grants []Grant, from, to time.Duration) float64 {
	if to <= from {
		return 0
	}
	n := 0
	for _, g := range grants {
		if g.Granted >= from && g.Granted < to && g.leads() {
			n++
		}
	}
	return float64(n) / (to - from).Seconds()
}

// against compares a with base, the same primitive's in the baseline; a
// baseline without grants compares nothing.
func (a *Availability) against(base Availability) {
	a.OfBaseline, a.Compared = 0, false
	if base.PerSecond > 0 {
		a.OfBaseline, a.Compared = a.PerSecond/base.PerSecond, true
	}
}

// compareAvailability compares r's availability, the lock's and each
// primitive's, with base's, the baseline of the same run; with base nil
// (the run left the baseline out) nothing is compared.
func (r *Result) compareAvailability(base *Result) {
	r.Availability.Compared = false
	for i := range r.Prims {
		r.Prims[i].Availability.Compared = false
	}
	if base == nil {
		return
	}
	r.Availability.against(base.Availability)
	for i, p := range r.Prims {
		if bp, ok := base.prim(p.Primitive); ok {
			r.Prims[i].Availability.against(bp.Availability)
		}
	}
}

// belowFloor says how far the lock's availability fell short of its
// scenario's MinAvailability, or "" when it did not: no floor, no
// baseline to compare with, or at least the floor.
func (r Result) belowFloor() string {
	floor, a := r.Scenario.MinAvailability, r.Availability
	if floor <= 0 || !a.Compared || a.OfBaseline >= floor {
		return ""
	}
	return fmt.Sprintf("%.1f lock grants/s is %.2f of the baseline's, below the floor of %.2f",
		a.PerSecond, a.OfBaseline, floor)
}

// rateCell prints a for a table: grants per second, and what share of
// the baseline's that is when compared, e.g. "41.2 (0.97)".
func (a Availability) rateCell() string {
	if !a.Compared {
		return fmt.Sprintf("%.1f", a.PerSecond)
	}
	return fmt.Sprintf("%.1f (%.2f)", a.PerSecond, a.OfBaseline)
}

// ofBaselineCell prints a's share of the baseline's, "-" when not
// compared.
func (a Availability) ofBaselineCell() string {
	if !a.Compared {
		return "-"
	}
	return fmt.Sprintf("%.2f", a.OfBaseline)
}

// floorCell prints r's floor, "-" for none, marked "below" when missed.
func (r Result) floorCell() string {
	floor := r.Scenario.MinAvailability
	switch {
	case floor <= 0:
		return "-"
	case r.belowFloor() != "":
		return fmt.Sprintf("%.2f(below)", floor)
	}
	return fmt.Sprintf("%.2f", floor)
}
