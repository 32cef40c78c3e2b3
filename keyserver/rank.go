package keyserver

import (
	"strings"

	"github.com/goredlock/goredlock/internal/layout"
)

// Compare ranks holder, the value that holds a key (a token or a
// promise), against a caller's token: the rank rule by which every server
// that keeps lines (Notifier, SetLocker's AcquireAllInLine) orders waiters
// and reports a holder, identically, so that every server orders the
// waiters alike. A server applies it by calling Compare and PromiseOf, or,
// where it runs elsewhere (a Redis key server's Lua), by the same steps on
// the same bytes.
//
// A token carries a rank when it is 49 bytes long with a dot at index 16:
// the redlock client's tokens are 16 hexadecimal digits of the time their
// call began (Unix milliseconds), a dot, and 32 random hexadecimal digits,
// of which the first 8 are drawn once per call and the rest once per
// attempt. Its rank is its first 25 bytes (the time and the call's 8
// digits), so that the attempts of one call, each with a fresh token,
// share a rank, two calls of the same millisecond still differ, and ranks
// compare as byte strings, earliest first. Any other token (another
// library's, a user's own) carries no rank: its call is neither put in
// line nor ordered, and is served as it comes.
//
// Compare is 0 when either value carries no rank or both carry the same;
// otherwise, as strings.Compare, -1 when the holder's rank is lower (its
// call began first) and +1 when the caller's is. A server reports it with
// a refusal (Holder.Rank) instead of the holder's token, so that
// contenders who split the servers between them agree on which of them
// gives way without learning anything of each other's
// tokens.
func Compare(holder, caller string) int {
	h, c := layout.RankOf(holder), layout.RankOf(caller)
	if h == "" || c == "" {
		return 0
	}
	return strings.Compare(h, c)
}

// PromiseOf is the value a server stores in a key that a release promised
// to the call that token belongs to (see Notifier): the token's rank (see
// Compare) padded with '~' to a token's length. It compares as that call,
// so that the call's next attempt, whichever token it draws, claims the
// key, and it can never equal a token, whose digits are hexadecimal, so
// that no Release of a token deletes it. It is "" for a token that carries
// no rank: such a call is never put in line nor promised a key. A server
// that keeps a line in a sorted structure may use it as the call's member
// there: members then sort by rank.
func PromiseOf(token string) string { return layout.PromiseOf(token) }
