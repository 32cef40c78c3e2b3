package keyserver

import "github.com/goredlock/goredlock/internal/layout"

// Order is how a holder's token ranks against a caller's (see Compare).
type Order int8

const (
	// Unranked: either token carries no rank, or both carry the same.
	Unranked Order = iota
	// HolderFirst: the holder's rank is lower, its Acquire began first.
	HolderFirst
	// CallerFirst: the caller's rank is lower.
	CallerFirst
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
// Compare is Unranked when either value carries no rank or both carry the
// same; otherwise whichever rank is lower (the earlier call) comes first.
// A server reports it with a refusal (Holder.Rank) instead of the holder's
// token, so that contenders who split the servers between them agree on
// which of them gives way without learning anything of each other's
// tokens.
func Compare(holder, caller string) Order {
	h, c := layout.RankOf(holder), layout.RankOf(caller)
	switch {
	case h == "" || c == "" || h == c:
		return Unranked
	case h < c:
		return HolderFirst
	}
	return CallerFirst
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
