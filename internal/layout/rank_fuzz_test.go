package layout

import (
	"github.com/goredlock/goredlock/keyserver"
	"strings"
	"testing"
)

// FuzzRanks checks the token format's rules on arbitrary tokens: Compare
// is antisymmetric, a promise carries its token's rank and can never be a
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
	opposite := map[keyserver.Order]keyserver.Order{keyserver.Unranked: keyserver.Unranked, keyserver.HolderFirst: keyserver.CallerFirst, keyserver.CallerFirst: keyserver.HolderFirst}
	f.Fuzz(func(t *testing.T, a, b string) {
		if got, want := Compare(b, a), opposite[Compare(a, b)]; got != want {
			t.Fatalf("Compare(%q, %q) = %d but Compare(%q, %q) = %d", a, b, Compare(a, b), b, a, got)
		}
		p := PromiseOf(a)
		if (p == "") != (RankOf(a) == "") {
			t.Fatalf("PromiseOf(%q) = %q, RankOf = %q", a, p, RankOf(a))
		}
		if p == "" {
			return
		}
		if RankOf(p) != RankOf(a) || Compare(p, a) != keyserver.Unranked {
			t.Fatalf("the promise %q of %q does not carry its rank", p, a)
		}
		if !strings.HasSuffix(p, "~") {
			t.Fatalf("the promise %q of %q could be a token", p, a)
		}
	})
}
