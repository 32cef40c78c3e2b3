package chaos

import (
	"slices"
	"strings"
	"testing"
	"time"
)

// setOf is the records of a set grant of names (perName), held from
// granted until released, valid until until, asked for when granted; the
// fences, when given, are the names' in order.
func setOf(client int, names []string, granted, until, released time.Duration, fences ...uint64) []Grant {
	g := Grant{Client: client, Workload: AcquireAll, Name: strings.Join(names, ","), Asked: granted, Granted: granted,
		FirstUntil: until, Until: until, Released: released, Lost: Never}
	return perName(g, names, func(n string) uint64 {
		if i := slices.Index(names, n); i < len(fences) {
			return fences[i]
		}
		return 0
	})
}

// sets numbers the records of several sets as a history does.
func sets(recs ...[]Grant) []Grant { return history(slices.Concat(recs...)...) }

func TestSetChecker(t *testing.T) {
	ab, bc, cd := []string{"a", "b"}, []string{"b", "c"}, []string{"c", "d"}
	abc := []string{"a", "b", "c"}
	runCheckerCases(t, CheckSets, []checkerCase{
		{name: "overlapping sets one after the other", grants: sets(
			setOf(1, ab, 0, 1000*ms, 100*ms),
			setOf(2, bc, 100*ms, 1100*ms, 200*ms),
			setOf(1, abc, 200*ms, 1200*ms, 300*ms),
		)},
		{name: "sets of no common name held together", most: 1, grants: sets(
			setOf(1, ab, 0, 1000*ms, 100*ms),
			setOf(2, cd, 50*ms, 1050*ms, 200*ms),
		)},
		{name: "sets held together on their common name", want: []Kind{Overlap}, overlaps: 1, maxOverlap: 50 * ms, most: 2,
			grants: sets(
				setOf(1, ab, 0, 1000*ms, 100*ms),
				setOf(2, bc, 50*ms, 1050*ms, 200*ms),
			)},
		{name: "a triple held with two pairs, a name each", want: []Kind{Overlap, Overlap}, overlaps: 2, maxOverlap: 40 * ms,
			grants: sets(
				setOf(1, abc, 0, 1000*ms, 100*ms),
				setOf(2, []string{"a", "x"}, 60*ms, 1060*ms, 200*ms),
				setOf(3, []string{"y", "c"}, 70*ms, 1070*ms, 200*ms),
			)},
		{name: "a set's hold ends at its Until", grants: sets(
			setOf(1, ab, 0, 100*ms, 500*ms),
			setOf(2, bc, 100*ms, 1100*ms, 200*ms),
		)},
		{name: "each name's fences rising", grants: sets(
			setOf(1, ab, 0, 1000*ms, 100*ms, 3, 7),
			setOf(2, bc, 100*ms, 1100*ms, 200*ms, 8, 1),
			setOf(3, cd, 200*ms, 1200*ms, 300*ms, 2, 1),
		)},
		{name: "a name's fence is its own, not the set's first", grants: sets(
			setOf(1, ab, 0, 1000*ms, 100*ms, 10, 2),
			setOf(2, bc, 100*ms, 1100*ms, 200*ms, 3, 1), // b: 2 then 3
		)},
		{name: "a name's fence going back", want: []Kind{FenceOrder}, grants: sets(
			setOf(1, ab, 0, 1000*ms, 100*ms, 3, 7),
			setOf(2, bc, 100*ms, 1100*ms, 200*ms, 6, 1), // b: 7 then 6
		)},
		{name: "a name's fence repeated by a single lock of it", want: []Kind{FenceOrder}, grants: sets(
			setOf(1, ab, 0, 1000*ms, 100*ms, 3, 7),
			[]Grant{with(grant(2, 100*ms, 1100*ms, 200*ms), func(g *Grant) { g.Name, g.Fence = "b", 7 })},
		)},
		{name: "a set returned past its Until, on each name", want: []Kind{PastGrant, PastGrant}, grants: sets(
			setOf(1, ab, 1000*ms, 1000*ms, 1010*ms),
		)},
	})
}

func TestSetViolationsNameTheSet(t *testing.T) {
	r := CheckSets(sets(
		setOf(1, []string{"a", "b"}, 0, 1000*ms, 100*ms),
		setOf(2, []string{"c", "b"}, 50*ms, 1050*ms, 200*ms),
	))
	if len(r.Violations) != 1 {
		t.Fatalf("violations %v, want one overlap", r.Violations)
	}
	v := r.Violations[0]
	want := `overlap: lock in a set "b": grant #1 (client 1, acquireall a+b, at 0s) and grant #3 (client 2, acquireall c+b, at 50ms) held it together for 50ms`
	if v.Of != SetPrim || v.String() != want || !slices.Equal(v.Grants, []int{1, 3}) {
		t.Errorf("violation %q of %q on grants %v, want %q on grants [1 3]", v, v.Of, v.Grants, want)
	}
}

func TestPerName(t *testing.T) {
	g := with(grant(1, 0, 1000*ms, 100*ms), func(g *Grant) { g.Fence, g.Token = 4, "tok" })
	fences := map[string]uint64{"a": 4, "b": 9, "c": 2}
	fenceOf := func(n string) uint64 { return fences[n] }

	one := perName(g, []string{"a"}, fenceOf)
	if len(one) != 1 || one[0].Name != g.Name || one[0].Fence != 4 || one[0].Set != nil {
		t.Errorf("perName of one name = %+v, want the grant as it was", one)
	}
	names := []string{"c", "a", "b"}
	recs := perName(g, names, fenceOf)
	if len(recs) != 3 {
		t.Fatalf("%d records of a set of three", len(recs))
	}
	for i, r := range recs {
		if r.Name != names[i] || r.Fence != fences[names[i]] || !slices.Equal(r.Set, names) {
			t.Errorf("record %d: name %q fence %d set %v, want %q, %d, %v", i, r.Name, r.Fence, r.Set, names[i], fences[names[i]], names)
		}
		if r.Token != g.Token || r.Granted != g.Granted || r.Until != g.Until || r.Released != g.Released || r.Client != g.Client {
			t.Errorf("record %d changed the grant's holder or times: %+v", i, r)
		}
		if r.leads() != (i == 0) {
			t.Errorf("record %d leads %v: only the first name's stands for the set", i, r.leads())
		}
	}
}

func TestPerSecondCountsASetOnce(t *testing.T) {
	gs := sets(
		setOf(1, []string{"a", "b", "c"}, 0, time.Second, 10*ms),
		setOf(2, []string{"d", "e"}, 100*ms, time.Second, 110*ms),
		[]Grant{grant(3, 200*ms, time.Second, 210*ms)},
	)
	if got := perSecond(gs, 0, time.Second); got != 3 {
		t.Errorf("perSecond = %v, want 3: two sets and a lock", got)
	}
}
