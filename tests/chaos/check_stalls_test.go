package chaos

import (
	"testing"
	"time"
)

// TestStallsExcuseOnlyWhatTheyExplain: a loss heard late but before Until
// is the machine's when the process stalled as long over that time; not
// when the stall was shorter or elsewhere, and never past Until.
func TestStallsExcuseOnlyWhatTheyExplain(t *testing.T) {
	ms := time.Millisecond
	// Due at 1000 − 100 = 900 ms, late after 950 ms; Until at 1000 ms.
	g := func(id int, lost time.Duration) Grant {
		return Grant{ID: id, Name: "a", Until: 1000 * ms, Margin: 100 * ms, Lost: lost}
	}
	grants := []Grant{g(1, 990*ms), g(2, 990*ms), g(3, 1010*ms), g(4, 990*ms)}
	late := func(id int) Violation { return Violation{Kind: LateLoss, Name: "a", Grants: []int{id}} }
	for _, tc := range []struct {
		name   string
		stalls []stall
		want   []int // the grants whose late losses stay violations
	}{
		{"no stall", nil, []int{1, 2, 3, 4}},
		{"a stall as long, over the time", []stall{{at: 985 * ms, late: 60 * ms}}, []int{3}},
		{"a stall from when the loss was due, with the slack", []stall{{at: 940 * ms, late: 45 * ms}}, []int{3}},
		{"a shorter stall", []stall{{at: 985 * ms, late: 20 * ms}}, []int{1, 2, 3, 4}},
		{"a stall before the loss was due", []stall{{at: 890 * ms, late: 60 * ms}}, []int{1, 2, 3, 4}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &stallProbe{stalls: tc.stalls}
			rest, excused := p.excuse([]Violation{late(1), late(2), late(3), late(4)}, grants)
			var got []int
			for _, v := range rest {
				got = append(got, v.Grants[0])
			}
			if len(got) != len(tc.want) || excused != 4-len(tc.want) {
				t.Fatalf("kept %v (excused %d); want %v", got, excused, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Fatalf("kept %v; want %v", got, tc.want)
				}
			}
		})
	}
}
