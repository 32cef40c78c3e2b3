package chaos

import (
	"context"

	"github.com/goredlock/goredlock/redlock"
)

// The workload of locks taken several names at once (AcquireAll): its
// clients take random pairs and triples of the load's SetNames, which
// overlap and name their common names in different orders, hold them
// briefly and release them, through their own paths to the same faulted
// nodes as every other client. Every set client fences (setClientOptions),
// so that each name's tokens can be checked in grant order.

// acquireAll takes a set of two or three names, holds it briefly (as
// acquire holds a lock) and releases it; it stops holding as soon as it
// hears the set is lost. Its grant is recorded once per name (perName).
func (c *client) acquireAll(ctx context.Context) {
	names := c.pickSet(c.load.SetNames)
	l, g, ok := c.take(ctx, "acquireall", AcquireAll, func(ctx context.Context) (*redlock.Lock, error) {
		return c.rc.AcquireAll(ctx, names, c.load.TTL)
	})
	if !ok {
		return
	}
	c.hold(l, &g, c.careful(l, c.load.MaxHold), ctx.Done())
	c.release(l, &g)
}

// pickSet draws two or three distinct names of names (fewer when there are
// fewer), in a random order: sets of six names overlap often, and two sets
// name their common names in either order, which must not deadlock.
func (c *client) pickSet(names []string) []string {
	k := min(2+c.rng.IntN(2), len(names))
	set := make([]string, k)
	for i, j := range c.rng.Perm(len(names))[:k] {
		set[i] = names[j]
	}
	return set
}

// perName returns the records of g, a grant of the lock whose names are
// names: g itself for a lock of one name (or a primitive), and for a set
// one copy of g per name, with that name, its fencing token (fenceOf) and
// the set's names (Grant.Set). The checkers work name by name, so a
// set's records are checked against every other hold of each of its
// names exactly as separate locks would be: no second checker for sets.
func perName(g Grant, names []string, fenceOf func(string) uint64) []Grant {
	if len(names) <= 1 {
		return []Grant{g}
	}
	records := make([]Grant, len(names))
	for i, n := range names {
		r := g
		r.Name, r.Fence, r.Set = n, fenceOf(n), names
		records[i] = r
	}
	return records
}
