package chaos

import (
	"math/rand/v2"
	"slices"
	"testing"
)

func TestPickSet(t *testing.T) {
	c := &client{rng: rand.New(rand.NewPCG(1, 2))}
	names := []string{"M0", "M1", "M2", "M3", "M4", "M5"}
	sizes := make(map[int]int)
	orders := make(map[[2]string]bool) // of M0 and M1, when a set has both
	for range 500 {
		set := c.pickSet(names)
		sizes[len(set)]++
		if len(set) < 2 || len(set) > 3 {
			t.Fatalf("pickSet = %v: want two or three names", set)
		}
		sorted := slices.Clone(set)
		slices.Sort(sorted)
		if len(slices.Compact(sorted)) != len(set) {
			t.Fatalf("pickSet = %v: a name twice", set)
		}
		for _, n := range set {
			if !slices.Contains(names, n) {
				t.Fatalf("pickSet = %v: %q is not one of %v", set, n, names)
			}
		}
		if i, j := slices.Index(set, "M0"), slices.Index(set, "M1"); i >= 0 && j >= 0 {
			orders[[2]string{set[min(i, j)], set[max(i, j)]}] = true
		}
	}
	if sizes[2] == 0 || sizes[3] == 0 {
		t.Errorf("sizes drawn %v: want pairs and triples", sizes)
	}
	if len(orders) != 2 {
		t.Errorf("M0 and M1 came in the orders %v: want both", orders)
	}
	if set := c.pickSet([]string{"a", "b"}); len(set) != 2 {
		t.Errorf("pickSet of two names = %v, want both", set)
	}
}
