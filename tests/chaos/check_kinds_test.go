package chaos

import (
	"slices"
	"strings"
	"testing"
	"time"
)

// held is a hold of workload work of "a", granted when asked, valid until
// until, released at released; no loss, no fence.
func held(work Workload, client int, granted, until, released time.Duration) Grant {
	return Grant{Client: client, Workload: work, Name: "a", Asked: granted, Granted: granted,
		FirstUntil: until, Until: until, Released: released, Lost: Never}
}

// permit3 is a permit of the 3-permit semaphore "a".
func permit3(client int, granted, until, released time.Duration) Grant {
	return with(held(Permit, client, granted, until, released), func(g *Grant) { g.Permits = 3 })
}

func fenced(f uint64, asked time.Duration) func(*Grant) {
	return func(g *Grant) { g.Fence, g.Asked = f, asked }
}

// checkerCase is a hand-made history that one checker must flag as want,
// or not at all.
type checkerCase struct {
	name       string
	grants     []Grant
	want       []Kind
	overlaps   int
	maxOverlap time.Duration
	most       int // 0: not checked
}

func runCheckerCases(t *testing.T, check func([]Grant) Report, cases []checkerCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := check(tc.grants)
			if got := kinds(r); !slices.Equal(got, tc.want) {
				t.Fatalf("violations %v, want %v: %v", got, tc.want, r.Violations)
			}
			if r.Overlaps != tc.overlaps || r.MaxOverlap != tc.maxOverlap {
				t.Fatalf("%d overlaps, longest %v; want %d, %v", r.Overlaps, r.MaxOverlap, tc.overlaps, tc.maxOverlap)
			}
			if tc.most != 0 && r.MostAtOnce != tc.most {
				t.Fatalf("MostAtOnce = %d, want %d", r.MostAtOnce, tc.most)
			}
			if r.Grants != len(tc.grants) {
				t.Fatalf("Grants = %d, want %d", r.Grants, len(tc.grants))
			}
		})
	}
}

func TestSemaphoreChecker(t *testing.T) {
	runCheckerCases(t, CheckSemaphore, []checkerCase{
		{name: "three holders of three permits", most: 3, grants: history(
			permit3(1, 0, 1000*ms, 300*ms),
			permit3(2, 10*ms, 1010*ms, 300*ms),
			permit3(3, 20*ms, 1020*ms, 300*ms),
		)},
		{name: "a fourth holder", want: []Kind{TooManyHolders}, overlaps: 1, maxOverlap: 70 * ms, most: 4, grants: history(
			permit3(1, 0, 1000*ms, 300*ms),
			permit3(2, 10*ms, 1010*ms, 100*ms),
			permit3(3, 20*ms, 1020*ms, 300*ms),
			permit3(4, 30*ms, 1030*ms, 300*ms),
		)},
		{name: "a fourth and a fifth", want: []Kind{TooManyHolders, TooManyHolders}, overlaps: 2, maxOverlap: 70 * ms, most: 5, grants: history(
			permit3(1, 0, 1000*ms, 300*ms),
			permit3(2, 10*ms, 1010*ms, 100*ms),
			permit3(3, 20*ms, 1020*ms, 300*ms),
			permit3(4, 30*ms, 1030*ms, 300*ms),
			permit3(5, 40*ms, 1040*ms, 300*ms),
		)},
		{name: "a fourth once one was released", most: 3, grants: history(
			permit3(1, 0, 1000*ms, 300*ms),
			permit3(2, 10*ms, 1010*ms, 30*ms),
			permit3(3, 20*ms, 1020*ms, 300*ms),
			permit3(4, 30*ms, 1030*ms, 300*ms),
		)},
		{name: "a permit ends at Until, however late the release", grants: history(
			permit3(1, 0, 100*ms, 900*ms),
			permit3(2, 10*ms, 1010*ms, 300*ms),
			permit3(3, 20*ms, 1020*ms, 300*ms),
			permit3(4, 100*ms, 1100*ms, 300*ms),
		)},
		{name: "a millisecond before Until is one too many", want: []Kind{TooManyHolders}, overlaps: 1, maxOverlap: ms, grants: history(
			permit3(1, 0, 100*ms, 900*ms),
			permit3(2, 10*ms, 1010*ms, 300*ms),
			permit3(3, 20*ms, 1020*ms, 300*ms),
			permit3(4, 99*ms, 1100*ms, 300*ms),
		)},
		{name: "each semaphore its own permits", grants: history(
			permit3(1, 0, 1000*ms, 300*ms),
			permit3(2, 10*ms, 1010*ms, 300*ms),
			permit3(3, 20*ms, 1020*ms, 300*ms),
			with(permit3(4, 30*ms, 1030*ms, 300*ms), func(g *Grant) { g.Name = "b" }),
		)},
		{name: "the count of the permit granted", want: []Kind{TooManyHolders}, overlaps: 1, maxOverlap: 270 * ms, grants: history(
			permit3(1, 0, 1000*ms, 300*ms),
			with(permit3(2, 30*ms, 1030*ms, 300*ms), func(g *Grant) { g.Permits = 1 }),
		)},
		{name: "tokens of permits held together in any order", grants: history(
			with(permit3(1, 10*ms, 1000*ms, 300*ms), fenced(5, 0)),
			with(permit3(2, 20*ms, 1020*ms, 300*ms), fenced(3, 5*ms)), // asked before #0 was granted
		)},
		{name: "a permit asked after a grant has a higher token", grants: history(
			with(permit3(1, 10*ms, 1000*ms, 300*ms), fenced(5, 0)),
			with(permit3(2, 20*ms, 1020*ms, 300*ms), fenced(6, 15*ms)),
		)},
		{name: "a permit asked after a grant with a lower token", want: []Kind{FenceOrder}, grants: history(
			with(permit3(1, 10*ms, 1000*ms, 300*ms), fenced(5, 0)),
			with(permit3(2, 20*ms, 1020*ms, 300*ms), fenced(4, 15*ms)),
		)},
		{name: "a token repeated", want: []Kind{FenceOrder}, grants: history(
			with(permit3(1, 10*ms, 1000*ms, 30*ms), fenced(5, 0)),
			with(permit3(2, 40*ms, 1040*ms, 300*ms), fenced(5, 35*ms)),
		)},
		{name: "a loss heard late and a grant past Until", want: []Kind{PastGrant, LateLoss}, grants: history(
			permit3(1, 100*ms, 100*ms, 110*ms),
			with(permit3(2, 0, 1000*ms, 1010*ms), func(g *Grant) { g.Lost = 1001 * ms }),
		)},
	})
}

func TestRWMutexChecker(t *testing.T) {
	reader := func(client int, granted, until, released time.Duration) Grant {
		return held(Reader, client, granted, until, released)
	}
	writer := func(client int, granted, until, released time.Duration) Grant {
		return held(Writer, client, granted, until, released)
	}
	runCheckerCases(t, CheckRWMutex, []checkerCase{
		{name: "readers together", most: 4, grants: history(
			reader(1, 0, 1000*ms, 300*ms),
			reader(2, 10*ms, 1010*ms, 300*ms),
			reader(3, 20*ms, 1020*ms, 300*ms),
			reader(4, 30*ms, 1030*ms, 300*ms),
		)},
		{name: "writers and readers one after the other", grants: history(
			reader(1, 0, 1000*ms, 100*ms),
			reader(2, 10*ms, 1010*ms, 100*ms),
			writer(3, 100*ms, 1100*ms, 200*ms),
			writer(4, 200*ms, 1200*ms, 300*ms),
			reader(1, 300*ms, 1300*ms, 400*ms),
		)},
		{name: "a writer while a reader holds", want: []Kind{WriterShared}, overlaps: 1, maxOverlap: 50 * ms, grants: history(
			reader(1, 0, 1000*ms, 100*ms),
			writer(2, 50*ms, 1050*ms, 200*ms),
		)},
		{name: "a reader while a writer holds", want: []Kind{WriterShared}, overlaps: 1, maxOverlap: 20 * ms, grants: history(
			writer(1, 0, 1000*ms, 100*ms),
			reader(2, 50*ms, 1050*ms, 70*ms),
		)},
		{name: "two writers", want: []Kind{WriterShared}, overlaps: 1, maxOverlap: 50 * ms, grants: history(
			writer(1, 0, 1000*ms, 100*ms),
			writer(2, 50*ms, 1050*ms, 200*ms),
		)},
		{name: "a writer among readers", want: []Kind{WriterShared, WriterShared}, overlaps: 2, maxOverlap: 180 * ms, grants: history(
			reader(1, 0, 1000*ms, 100*ms),
			reader(2, 10*ms, 1000*ms, 300*ms),
			writer(3, 20*ms, 1050*ms, 200*ms),
		)},
		{name: "a read hold ends at Until, however late the release", grants: history(
			reader(1, 0, 100*ms, 900*ms),
			writer(2, 100*ms, 1100*ms, 200*ms),
		)},
		{name: "tokens of readers held together in any order", grants: history(
			with(reader(1, 10*ms, 1000*ms, 300*ms), fenced(7, 0)),
			with(reader(2, 20*ms, 1020*ms, 300*ms), fenced(6, 5*ms)),
		)},
		{name: "a reader asked after a reader's grant with a lower token", want: []Kind{FenceOrder}, grants: history(
			with(reader(1, 10*ms, 1000*ms, 300*ms), fenced(7, 0)),
			with(reader(2, 20*ms, 1020*ms, 300*ms), fenced(6, 15*ms)),
		)},
		{name: "a writer that waited out a reader, with a lower token", want: []Kind{FenceOrder}, grants: history(
			with(reader(1, 10*ms, 1000*ms, 20*ms), fenced(6, 5*ms)),
			with(writer(2, 30*ms, 1030*ms, 40*ms), fenced(5, 0)), // asked before the reader's grant
		)},
		{name: "a reader that waited out a writer, with a lower token", want: []Kind{FenceOrder}, grants: history(
			with(writer(1, 10*ms, 1000*ms, 20*ms), fenced(5, 5*ms)),
			with(reader(2, 30*ms, 1030*ms, 40*ms), fenced(4, 0)),
		)},
		{name: "writers and readers with rising tokens and unfenced ones between", grants: history(
			with(writer(1, 10*ms, 1000*ms, 20*ms), fenced(5, 5*ms)),
			reader(2, 30*ms, 1030*ms, 40*ms),
			with(reader(3, 31*ms, 1031*ms, 40*ms), fenced(8, 0)),
			with(reader(4, 32*ms, 1032*ms, 40*ms), fenced(7, 0)),
			with(writer(1, 50*ms, 1050*ms, 60*ms), fenced(9, 0)),
		)},
	})
}

func TestElectionChecker(t *testing.T) {
	leader := func(client int, term uint64, granted, until, released time.Duration) Grant {
		return with(held(Leader, client, granted, until, released), func(g *Grant) { g.Fence = term })
	}
	runCheckerCases(t, CheckElection, []checkerCase{
		{name: "one leader after the other, terms rising", most: 1, grants: history(
			leader(1, 1, 0, 1000*ms, 100*ms),
			leader(2, 2, 100*ms, 1100*ms, 200*ms),
			leader(1, 4, 300*ms, 1300*ms, 400*ms),
		)},
		{name: "two leaders at once", want: []Kind{TwoLeaders}, overlaps: 1, maxOverlap: 50 * ms, grants: history(
			leader(1, 1, 0, 1000*ms, 100*ms),
			leader(2, 2, 50*ms, 1050*ms, 200*ms),
		)},
		{name: "a leadership ends at Until, however late the resignation", grants: history(
			leader(1, 1, 0, 100*ms, 900*ms),
			leader(2, 2, 100*ms, 1100*ms, 200*ms),
		)},
		{name: "a term repeated", want: []Kind{FenceOrder}, grants: history(
			leader(1, 3, 0, 1000*ms, 100*ms),
			leader(2, 3, 100*ms, 1100*ms, 200*ms),
		)},
		{name: "a term going back, even for a leader that asked first", want: []Kind{FenceOrder}, grants: history(
			leader(1, 3, 50*ms, 1000*ms, 100*ms),
			with(leader(2, 2, 100*ms, 1100*ms, 200*ms), func(g *Grant) { g.Asked = 0 }),
		)},
		{name: "a leadership without a term", want: []Kind{NoTerm}, grants: history(
			leader(1, 1, 0, 1000*ms, 100*ms),
			leader(2, 0, 100*ms, 1100*ms, 200*ms),
		)},
		{name: "a late loss", want: []Kind{LateLoss}, grants: history(
			with(leader(1, 1, 0, 1000*ms, 1010*ms), func(g *Grant) { g.Margin = 100 * ms; g.Lost = 960 * ms }),
		)},
	})
}

func TestPrimitiveViolationsNameThePrimitive(t *testing.T) {
	for _, tc := range []struct {
		check func([]Grant) Report
		gs    []Grant
		want  string
	}{
		{CheckSemaphore, history(with(permit3(1, 0, 1000*ms, 100*ms), func(g *Grant) { g.Permits = 0 })), `semaphore "a"`},
		{CheckRWMutex, history(held(Writer, 1, 0, 1000*ms, 100*ms), held(Writer, 2, 50*ms, 1000*ms, 100*ms)), `read-write lock "a"`},
		{CheckElection, history(held(Leader, 1, 0, 1000*ms, 100*ms)), `election "a"`},
		{Check, history(grant(1, 0, 1000*ms, 100*ms), grant(2, 50*ms, 1000*ms, 100*ms)), `lock "a"`},
	} {
		vs := tc.check(tc.gs).Violations
		if len(vs) != 1 || !strings.Contains(vs[0].String(), tc.want) {
			t.Errorf("violations %v, want one naming %s", vs, tc.want)
		}
	}
}

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

func TestCheckLockDelay(t *testing.T) {
	const d = 500 * ms
	for _, tc := range []struct {
		name    string
		h       []Grant
		expired int
		broken  int
	}{
		{"released in time: the next grant at once", history(grant(0, 0, 100*ms, 50*ms), grant(1, 60*ms, 200*ms, 150*ms)), 0, 0},
		{"ran out: the next grant after the delay", history(grant(0, 0, 100*ms, Never), grant(1, 601*ms, 700*ms, 650*ms)), 1, 0},
		{"ran out: a grant within the delay", history(grant(0, 0, 100*ms, Never), grant(1, 300*ms, 700*ms, 650*ms)), 1, 1},
		{"released late: the next grant after the release", history(grant(0, 0, 100*ms, 300*ms), grant(1, 320*ms, 700*ms, 650*ms)), 1, 0},
		{"released late: a grant before the release", history(grant(0, 0, 100*ms, 300*ms), grant(1, 200*ms, 700*ms, 650*ms)), 1, 1},
		{"a grant before Until is an overlap, not this", history(grant(0, 0, 100*ms, Never), grant(1, 90*ms, 700*ms, 650*ms)), 1, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			expired, vs := CheckLockDelay(tc.h, d)
			if expired != tc.expired || len(vs) != tc.broken {
				t.Errorf("CheckLockDelay = %d ran out, violations %v; want %d and %d", expired, vs, tc.expired, tc.broken)
			}
			for _, v := range vs {
				if v.Kind != DelayBroken || !v.Kind.Safety() {
					t.Errorf("violation %v: want a DelayBroken, which is about safety", v)
				}
			}
		})
	}
}
