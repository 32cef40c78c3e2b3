package chaos

import "testing"

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
