package keyserver_test

import (
	"strings"
	"testing"

	"github.com/goredlock/goredlock/keyserver"
)

func TestCompare(t *testing.T) {
	const (
		early = "0000019a2b3c4d5e.0123456789abcdef0123456789abcdef"
		late  = "0000019a2b3c4d5f.0000000089abcdef0123456789abcdef"
	)
	for _, c := range []struct {
		holder, caller string
		want           int
	}{
		{early, late, -1},
		{late, early, 1},
		{early, early, 0},
		{early, "b", 0},
		{"a", late, 0},
		{keyserver.PromiseOf(early), late, -1}, // a promise ranks as its call
		{keyserver.PromiseOf(late), early, 1},
	} {
		if got := keyserver.Compare(c.holder, c.caller); got != c.want {
			t.Errorf("Compare(%q, %q) = %d, want %d", c.holder, c.caller, got, c.want)
		}
	}
}

// FuzzRanks checks the rank rule on arbitrary tokens: Compare is
// antisymmetric, a promise carries its token's rank and can never be a
// token, and only ranked tokens have promises.
func FuzzRanks(f *testing.F) {
	for _, seed := range [][2]string{
		{"0000019a2b3c4d5e.0123456789abcdef0123456789abcdef", "0000019a2b3c4d5f.0000000089abcdef0123456789abcdef"},
		{"0000019a2b3c4d5e.0123456789abcdef0123456789abcdef", "0000019a2b3c4d5e.0123456799999999999999999999999f"},
		{"a", "0000019a2b3c4d5e.0123456789abcdef0123456789abcdef"},
		{"", ""},
		{"3f2a8c4e-7d1b-4f6a-9c2e-5b8d1a7f3e90", "0000019a2b3c4d5e-0123456789abcdef0123456789abcdef"},
	} {
		f.Add(seed[0], seed[1])
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		if got, want := keyserver.Compare(b, a), -keyserver.Compare(a, b); got != want {
			t.Fatalf("Compare(%q, %q) = %d but Compare(%q, %q) = %d", a, b, keyserver.Compare(a, b), b, a, got)
		}
		p := keyserver.PromiseOf(a)
		ranked := len(a) == 49 && a[16] == '.'
		if (p == "") == ranked {
			t.Fatalf("PromiseOf(%q) = %q; a token of 49 bytes with a dot at index 16 has one, no other", a, p)
		}
		if p == "" {
			return
		}
		if p[:25] != a[:25] || keyserver.Compare(p, a) != 0 {
			t.Fatalf("the promise %q of %q does not carry its rank", p, a)
		}
		if !strings.HasSuffix(p, "~") || p == a {
			t.Fatalf("the promise %q of %q could be a token", p, a)
		}
	})
}
