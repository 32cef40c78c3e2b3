package keyserver

import (
	"context"
	"time"
)

// Notifier is a KeyServer that can tell a waiting client when a key is
// released, so that the client waits for the release instead of polling,
// and that describes, with a refusal, the key's holder: how long its key
// has left, so that a waiter never sleeps past an expiry (holders that
// crash, and clients of other libraries, publish nothing), and the
// holder's rank, so that contenders who split the servers between them
// agree on which of them gives way.
type Notifier interface {
	KeyServer
	// AcquireOrHolder is Acquire that, when another token holds key, also
	// describes that token's key on this server.
	AcquireOrHolder(ctx context.Context, key, token string, ttl time.Duration) (ok bool, h Holder, err error)
	// Watch starts watching key for its release on this server. The
	// returned channel is closed once a Release deleted key after Watch
	// returned, or once the watch broke (a lost connection): either way the
	// waiter should try again. stop ends the watch and must be called
	// exactly once; it is cheap, and so is Watch: a server shares one
	// subscription per key among the waiters of a process, and one
	// connection among all keys. ctx bounds only the setting up of the
	// watch.
	Watch(ctx context.Context, key string) (released <-chan struct{}, stop func(), err error)
}

// Holder describes the token that holds a key, as a refused
// AcquireOrHolder reports it.
type Holder struct {
	// Left is how long the holder's key has left to live on this server;
	// 0 when unknown, such as for a key with no TTL.
	Left time.Duration
	// Rank tells whose Acquire began first, the holder's or the caller's,
	// by the ranks their tokens carry (see RankOf): what contenders who
	// split the servers between them need to agree on which of them gives
	// way, without learning anything of each other's tokens.
	Rank Order
}

// Order is how a holder's token ranks against a caller's.
type Order int8

const (
	// Unranked: either token carries no rank, or both carry the same.
	Unranked Order = iota
	// HolderFirst: the holder's rank is lower, its Acquire began first.
	HolderFirst
	// CallerFirst: the caller's rank is lower.
	CallerFirst
)

// Compare ranks the token holding a key against a caller's token, by the
// rule every Notifier applies.
func Compare(holder, caller string) Order {
	h, c := RankOf(holder), RankOf(caller)
	switch {
	case h == "" || c == "" || h == c:
		return Unranked
	case h < c:
		return HolderFirst
	}
	return CallerFirst
}

// RankLen is the length of a rank; TokenLen that of a token carrying one.
const (
	RankLen  = 25
	TokenLen = 49
)

// RankOf returns the rank that token carries, or "" if it carries none.
//
// The redlock client's tokens are 16 hexadecimal digits of the time its
// Acquire call began (Unix milliseconds), a dot, and 32 random hexadecimal
// digits. Their rank is the first 25 characters: the time and 8 random
// digits, so that ranks compare as strings, earliest first, and two calls
// in the same millisecond still differ. A token is taken to carry a rank
// when it is TokenLen long with a dot at index 16; Redis key servers apply
// the same rule in Lua. Servers compare ranks and report only the order
// (see Compare): a refusal tells nothing of the holder's token.
func RankOf(token string) string {
	if len(token) != TokenLen || token[16] != '.' {
		return ""
	}
	return token[:RankLen]
}
