// Package layout is the layout of the redlock client's tokens and of the
// keys it asks key servers for: the rank a token carries, the promise a
// Notifier stores, and the keys of a lock's fence counter and line and of
// the primitives. The client and this module's key servers share it. The
// rank rule a key server applies is public, as keyserver.Compare and
// keyserver.PromiseOf, which read tokens by this layout.
package layout

import (
	"strings"
	"time"
)

// RankLen is the length of a rank; TokenLen that of a token carrying one.
const (
	RankLen  = 25
	TokenLen = 49
)

// MinTTL is the smallest TTL a key server accepts (keyserver.CheckTTL):
// TTLs have millisecond precision.
const MinTTL = time.Millisecond

// ClaimTTL is how long a key that a release promised to the next waiter
// stays promised (keyserver.Notifier): the waiter claims it within a round
// trip, and one that died blocks the others no longer than this.
const ClaimTTL = 500 * time.Millisecond

// MaxFreeHint bounds keyserver.HoldReply.Free, so that a refusal stays
// small however many permits a semaphore has.
const MaxFreeHint = 32

// RankOf returns the rank that token carries, or "" if it carries none.
//
// The redlock client's tokens are 16 hexadecimal digits of the time its
// Acquire call began (Unix milliseconds), a dot, and 32 random hexadecimal
// digits, of which the first 8 are drawn once per call and the rest once
// per attempt. Their rank is the first 25 characters: the time and the
// call's 8 random digits, so that ranks compare as strings, earliest
// first, two calls in the same millisecond still differ, and the attempts
// of one call share a rank. A token is taken to carry a rank when it is
// TokenLen long with a dot at index 16; Redis key servers apply the same
// rule in Lua. Servers compare ranks and report only the order
// (keyserver.Compare): a refusal tells nothing of the holder's token.
func RankOf(token string) string {
	if len(token) != TokenLen || token[16] != '.' {
		return ""
	}
	return token[:RankLen]
}

// PromiseOf is keyserver.PromiseOf, which documents it: the value a
// Notifier stores in a key promised to the call that token belongs to, its
// rank padded with '~' to a token's length; "" for a token that carries no
// rank. It is also the member that stands for the call in a Redis key
// server's line, where members sort by rank.
func PromiseOf(token string) string {
	r := RankOf(token)
	if r == "" {
		return ""
	}
	var p [TokenLen]byte
	copy(p[:], r)
	for i := RankLen; i < TokenLen; i++ {
		p[i] = '~'
	}
	return string(p[:])
}

// IsPromise reports whether value, which a key holds, is a promise
// (PromiseOf) rather than a token.
func IsPromise(value string) bool {
	return len(value) == TokenLen && value[16] == '.' && value[TokenLen-1] == '~'
}

// WaiterOf is the mark a waiting writer leaves: its token's rank, or the
// token itself when it carries none.
func WaiterOf(token string) string {
	if r := RankOf(token); r != "" {
		return r
	}
	return token
}

// RWKey is the key under which the client asks for the read-write lock
// called by the (prefixed) name key, in key's Cluster slot.
func RWKey(key string) string { return beside(key, ":rw") }

// ElectionKey is the key under which the client asks for the election
// called by the (prefixed) name key, in key's Cluster slot.
func ElectionKey(key string) string { return beside(key, ":election") }

// SemaphoreKey is the key under which the client asks for the semaphore
// called by the (prefixed) name key, in key's Cluster slot as FenceKey is:
// a lock and a semaphore of one name do not exclude each other.
func SemaphoreKey(key string) string { return beside(key, ":semaphore") }

// FenceKey is the key that holds the fence counter of the lock key key. In
// a Redis Cluster it hashes to key's slot: a key with a hash tag keeps it,
// and any other key becomes the tag, so that one script can touch both
// (a key that contains '}' without a tag of its own cannot, and its fenced
// calls fail with CROSSSLOT).
func FenceKey(key string) string { return beside(key, ":fence") }

// LineKey is the key that holds the line of waiters of the lock key key on
// a Redis key server (see Notifier), in key's Cluster slot as FenceKey is.
func LineKey(key string) string { return beside(key, ":line") }

// beside names a key that belongs to key, in key's Cluster slot.
func beside(key, suffix string) string {
	if open := strings.IndexByte(key, '{'); open >= 0 {
		if end := strings.IndexByte(key[open+1:], '}'); end > 0 {
			return key + suffix // key's own tag
		}
	}
	return "{" + key + "}" + suffix
}

// IncarnationKey is the key in which a Redis key server keeps its store's
// marker: an ID drawn by the first client that found the key absent, set
// with a TTL of IncarnationTTL, so that IncarnationTTL less the TTL left is
// how long ago it was set, on the store's own clock. The store loses it
// with its data (a restart without persistence, a flush), so that its age
// is how long the store has held what it holds ("Which restarts" in
// docs/design.md).
const IncarnationKey = "goredlock:incarnation"

// IncarnationTTL is the TTL the marker is set with: about 31 years.
const IncarnationTTL = 1_000_000_000_000 * time.Millisecond

// MarkerAged is the command that sets a store's marker to id as if it had
// been set age ago (IncarnationTTL less age, in milliseconds): how the
// tests, the benchmarks and a provisioning step give a fresh store the
// history of one that has served for a while, so that its grants count at
// once. Never after a crash: the quarantine is what keeps a restarted
// store from granting a name another holder still has.
func MarkerAged(id string, age time.Duration) (cmd string, args []any) {
	return "SET", []any{IncarnationKey, id, "PX", (IncarnationTTL - age).Milliseconds()}
}
