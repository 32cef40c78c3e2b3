package chaos

import (
	"fmt"
	"slices"
)

// PrimResult is what one primitive's workloads did in a scenario and what
// its checker found.
type PrimResult struct {
	Primitive   Primitive
	Report               // its checker's
	FenceResets int      // fence-order breaks set apart, as Result.FenceResets
	Failures    int      // its clients' failed operations
	ByKind      []string // Failures broken down
	Clients     int      // its clients (an election's observers among them)
	Writes      int      // write holds among a read-write lock's grants
	Sets        int      // set grants among the records of sets, which are one per name
	// An election's observers: Leader reads that named a leader, that
	// found none, and values sent by Observe.
	Reads, NoLeader, Observed int
	// Availability is its grants per second while the faults were in
	// force, and that over the baseline's, once compared.
	Availability Availability
}

// primWorks returns the primitives' clients of a run: n[w] of each
// workload w, in the order of the kinds table (holdKinds).
func primWorks(n map[Workload]int) []Workload {
	var works []Workload
	for _, k := range primKinds() {
		for _, wk := range k.works {
			for range n[wk.w] {
				works = append(works, wk.w)
			}
		}
	}
	return works
}

// checkPrims checks the grants of each primitive whose clients ran with
// its kind's checker (holdKinds), and
// adds what those clients counted. countersLost sets fence-order breaks
// apart, as for the lock, in a scenario whose nodes restarted empty
// without fsync. An Observe stream that sent one value twice in a row is
// an ObserveRepeat violation of the election.
func checkPrims(byPrim map[Primitive][]Grant, clients []*client, countersLost bool) []PrimResult {
	var rs []PrimResult
	for _, k := range primKinds() {
		r := PrimResult{Primitive: k.prim, Report: k.check(byPrim[k.prim], 0)}
		for _, g := range byPrim[k.prim] {
			if g.Workload == Writer {
				r.Writes++
			}
			if len(g.Set) > 0 && g.leads() {
				r.Sets++
			}
		}
		byKind := make(map[string]int)
		for _, c := range clients {
			if c.work.Primitive() != k.prim {
				continue
			}
			r.Clients++
			r.Reads += c.reads
			r.NoLeader += c.noLeader
			r.Observed += c.changes
			for _, v := range c.repeats {
				r.Violations = append(r.Violations, Violation{Kind: ObserveRepeat, Of: k.prim,
					Detail: fmt.Sprintf("client %d's Observe sent %q twice in a row", c.id, v)})
			}
			for k, n := range c.failures {
				byKind[k] += n
			}
		}
		if r.Clients == 0 {
			continue
		}
		if countersLost {
			r.Violations, r.FenceResets = withoutFenceOrder(r.Violations)
		}
		for k, n := range byKind {
			r.Failures += n
			r.ByKind = append(r.ByKind, fmt.Sprintf("%s %d", k, n))
		}
		slices.Sort(r.ByKind)
		rs = append(rs, r)
	}
	return rs
}

// allOverlaps counts the overlaps of every kind: the lock's, the
// primitives' and the sets'.
func (r Result) allOverlaps() int {
	n := r.Overlaps
	for _, p := range r.Prims {
		n += p.Overlaps
	}
	return n
}

// prim returns the result of primitive p, if its clients ran.
func (r Result) prim(p Primitive) (PrimResult, bool) {
	for _, pr := range r.Prims {
		if pr.Primitive == p {
			return pr, true
		}
	}
	return PrimResult{}, false
}
