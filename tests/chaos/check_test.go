package chaos

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

const ms = time.Millisecond

// grant is a plain Acquire grant of lock "a" held from granted until
// released, valid until until; no loss, no fence.
func grant(client int, granted, until, released time.Duration) Grant {
	return Grant{Client: client, Workload: Acquire, Name: "a", Granted: granted,
		FirstUntil: until, Until: until, Released: released, Lost: Never}
}

func with(g Grant, f func(*Grant)) Grant { f(&g); return g }

func history(gs ...Grant) []Grant {
	for i := range gs {
		gs[i].ID = i
	}
	return gs
}

func kinds(r Report) []Kind {
	var ks []Kind
	for _, v := range r.Violations {
		ks = append(ks, v.Kind)
	}
	return ks
}

func TestCheckerFindsEachViolation(t *testing.T) {
	lost := func(at time.Duration) func(*Grant) { return func(g *Grant) { g.Lost = at } }
	fence := func(f uint64) func(*Grant) { return func(g *Grant) { g.Fence = f } }
	doGrant := func(client int, granted, released, lostAt time.Duration) Grant {
		return Grant{Client: client, Workload: Do, Name: "a", Granted: granted,
			FirstUntil: Never, Until: Never, Released: released, Lost: lostAt}
	}
	runCheckerCases(t, Check, []checkerCase{
		{name: "one after the other", grants: history(
			grant(1, 0, 1000*ms, 100*ms),
			grant(2, 100*ms, 1100*ms, 200*ms),
			grant(1, 250*ms, 1250*ms, 300*ms),
		)},
		{name: "held together", want: []Kind{Overlap}, overlaps: 1, maxOverlap: 50 * ms, grants: history(
			grant(1, 0, 1000*ms, 100*ms),
			grant(2, 50*ms, 1050*ms, 200*ms),
		)},
		{name: "other names never overlap", grants: history(
			grant(1, 0, 1000*ms, 100*ms),
			with(grant(2, 50*ms, 1050*ms, 200*ms), func(g *Grant) { g.Name = "b" }),
		)},
		{name: "a hold ends at Until, however late the release", grants: history(
			grant(1, 0, 100*ms, 500*ms),
			grant(2, 100*ms, 1100*ms, 200*ms),
		)},
		{name: "a millisecond before Until is an overlap", want: []Kind{Overlap}, overlaps: 1, maxOverlap: ms, grants: history(
			grant(1, 0, 100*ms, 500*ms),
			grant(2, 99*ms, 1100*ms, 200*ms),
		)},
		{name: "three holders at once", want: []Kind{Overlap, Overlap, Overlap}, overlaps: 3, maxOverlap: 80 * ms, grants: history(
			grant(1, 0, 1000*ms, 100*ms),
			grant(2, 10*ms, 1000*ms, 90*ms),
			grant(3, 20*ms, 1000*ms, 30*ms),
		)},
		{name: "an extended lock holds to its last Until", want: []Kind{Overlap}, overlaps: 1, maxOverlap: 100 * ms, grants: history(
			with(grant(1, 0, 100*ms, 2000*ms), func(g *Grant) { g.Until = 1500 * ms }),
			grant(2, 1400*ms, 2400*ms, 1500*ms),
		)},
		{name: "without Until, a Do's hold ends when it hears of the loss", grants: history(
			doGrant(1, 0, 300*ms, 60*ms),
			grant(2, 70*ms, 1070*ms, 100*ms),
		)},
		{name: "without Until, a Do holds to its release", want: []Kind{Overlap}, overlaps: 1, maxOverlap: 20 * ms, grants: history(
			doGrant(1, 0, 300*ms, Never),
			grant(2, 280*ms, 1280*ms, 400*ms),
		)},
		{name: "loss heard before Until with no margin", grants: history(
			with(grant(1, 0, 1000*ms, 1001*ms), lost(999*ms)),
		)},
		{name: "loss heard after Until with no margin", want: []Kind{LateLoss}, grants: history(
			with(grant(1, 0, 1000*ms, 1010*ms), lost(1001*ms)),
		)},
		{name: "loss heard within half the margin", grants: history(
			with(grant(1, 0, 1000*ms, 1000*ms), func(g *Grant) { g.Margin = 100 * ms; g.Lost = 940 * ms }),
		)},
		{name: "loss heard past half the margin", want: []Kind{LateLoss}, grants: history(
			with(grant(1, 0, 1000*ms, 1000*ms), func(g *Grant) { g.Margin = 100 * ms; g.Lost = 960 * ms }),
		)},
		{name: "a Do's loss is not timed without its Until", grants: history(
			doGrant(1, 0, 3000*ms, 2000*ms),
		)},
		{name: "a grant returned after its Until", want: []Kind{PastGrant}, grants: history(
			grant(1, 1000*ms, 1000*ms, 1010*ms),
		)},
		{name: "fences rising with gaps", grants: history(
			with(grant(1, 0, 1000*ms, 100*ms), fence(1)),
			grant(2, 100*ms, 1100*ms, 200*ms), // unfenced: not compared
			with(grant(3, 200*ms, 1200*ms, 300*ms), fence(7)),
		)},
		{name: "a fence repeated", want: []Kind{FenceOrder}, grants: history(
			with(grant(1, 0, 1000*ms, 100*ms), fence(5)),
			with(grant(2, 100*ms, 1100*ms, 200*ms), fence(5)),
		)},
		{name: "a fence going back", want: []Kind{FenceOrder, FenceOrder}, grants: history(
			with(grant(1, 0, 1000*ms, 100*ms), fence(5)),
			with(grant(2, 100*ms, 1100*ms, 200*ms), fence(3)),
			with(grant(3, 200*ms, 1200*ms, 300*ms), fence(4)), // still below 5
			with(grant(1, 300*ms, 1300*ms, 400*ms), fence(6)),
		)},
		{name: "fences are per name", grants: history(
			with(grant(1, 0, 1000*ms, 100*ms), fence(5)),
			with(grant(2, 100*ms, 1100*ms, 200*ms), func(g *Grant) { g.Name = "b"; g.Fence = 1 }),
		)},
		{name: "fences in grant order, not record order", grants: history(
			with(grant(2, 100*ms, 1100*ms, 200*ms), fence(2)),
			with(grant(1, 0, 1000*ms, 100*ms), fence(1)),
		)},
	})
}

func TestCheckerCountsLosses(t *testing.T) {
	r := Check(history(
		with(grant(1, 0, 1000*ms, 1000*ms), func(g *Grant) { g.Lost = 900 * ms }),
		grant(2, 1000*ms, 2000*ms, 1100*ms),
	))
	if r.Lost != 1 {
		t.Fatalf("Lost = %d, want 1", r.Lost)
	}
}

func TestViolationsNeverShowTokens(t *testing.T) {
	a := grant(1, 0, 1000*ms, 100*ms)
	a.Token = "secret-token-a"
	b := grant(2, 50*ms, 1050*ms, 200*ms)
	b.Token = "secret-token-b"
	for _, v := range Check(history(a, b)).Violations {
		if s := v.String(); strings.Contains(s, "secret") {
			t.Fatalf("a violation prints a token: %s", s)
		}
	}
}

func ExampleCheck() {
	grants := []Grant{
		{ID: 0, Client: 1, Workload: Acquire, Name: "jobs", Granted: 0,
			FirstUntil: 990 * ms, Until: 990 * ms, Released: 120 * ms, Lost: Never},
		{ID: 1, Client: 2, Workload: Acquire, Name: "jobs", Granted: 100 * ms,
			FirstUntil: 1090 * ms, Until: 1090 * ms, Released: 150 * ms, Lost: Never},
	}
	r := Check(grants)
	fmt.Println(r.Overlaps, r.MaxOverlap)
	for _, v := range r.Violations {
		fmt.Println(v)
	}
	// Output:
	// 1 20ms
	// overlap: lock "jobs": grant #0 (client 1, acquire, at 0s) and grant #1 (client 2, acquire, at 100ms) held it together for 20ms
}

// TestCheckCountsPasses: a grant with the token of an earlier grant of its
// name is a lock passed inside a client; the servers' grants each draw a
// token of their own, and a hold with no token (a primitive's) is none.
func TestCheckCountsPasses(t *testing.T) {
	g := func(id int, token string, from, to time.Duration) Grant {
		return Grant{ID: id, Name: "a", Token: token, Granted: from, FirstUntil: Never, Until: Never, Released: to, Lost: Never}
	}
	r := Check([]Grant{
		g(1, "t1", 0, 10),
		g(2, "t1", 11, 20), // passed
		g(3, "t1", 21, 30), // passed again
		g(4, "t2", 31, 40),
		g(5, "", 41, 50),
	})
	if r.Passes != 2 || len(r.Violations) != 0 {
		t.Fatalf("passes %d, violations %v; want 2 and none", r.Passes, r.Violations)
	}
}
