package keyserver

import (
	"context"
	"time"
)

// SetLocker is a KeyServer that takes several lock keys at once, all of
// them or none, in one atomic step: the client's AcquireAll holds a set of
// names on a quorum of such servers, and no server ever holds part of a
// set for its caller, so overlapping sets taken in different orders cannot
// deadlock ("Several names without deadlock" in docs/design.md).
//
// The keys are lock keys, with a lock's rules for each: a key holding the
// token, the token with the waiters' mark, or a promise to the token's
// call (see Notifier) is the caller's. On a Redis Cluster the keys must
// share a hash slot (give the names a common hash tag); a server that
// cannot take them in one step refuses with an error matching
// ErrInvalidArgument.
type SetLocker interface {
	KeyServer
	// AcquireAll stores token under every key with the TTL if no key is
	// held by another value, and reports true; otherwise it stores
	// nothing and describes the holder of a key that refused (its TTL
	// left and rank order). It also renews keys that hold token, so a
	// retried AcquireAll, or an extension, is harmless.
	AcquireAll(ctx context.Context, keys []string, token string, ttl time.Duration) (ok bool, h Holder, err error)
	// ExtendAll is AcquireAll for a set already held: it renews every key
	// and stores again the keys a restarted server lost, or none of them
	// when another value holds one.
	ExtendAll(ctx context.Context, keys []string, token string, ttl time.Duration) (bool, error)
	// ReleaseAll lets go of every key that holds token (as Release does),
	// and reports whether every key did.
	ReleaseAll(ctx context.Context, keys []string, token string) (bool, error)
	// AcquireAllInLine is AcquireAll for a call that waits its turn in
	// the keys' lines, the lines of Notifier that single keys wait in, so
	// that a set's waiters and a lock's are served together in rank
	// order. A server that keeps no lines (no Notifier) makes it
	// AcquireAll. On a Notifier:
	//
	//   - The set is granted, all or nothing as ever, when every key is
	//     free, holds token, or is promised to token's call; a granted
	//     caller leaves every line of the set.
	//   - A key promised to a later rank than the caller's is the caller's
	//     to take over: a later rank never holds up an earlier one. (The
	//     later call waits in that key's line again from its next call.)
	//   - A refused caller takes or keeps its place (one per key, under its
	//     token's rank) in the line of every key that another value holds,
	//     and keeps the keys promised to its call: they stay promised to it
	//     for LineTTL, renewed by each refused call, so that a set collects
	//     its keys one release at a time. h.Promised tells which.
	//   - Unless the refusal is by a key promised to an earlier rank than
	//     the caller's: the caller then gives up each key promised to it
	//     whose line's first waiter ranks before it (the key passes to that
	//     waiter, as LeaveLine passes it) and waits in that line again. A
	//     later rank so never keeps what an earlier one needs, and no cycle
	//     of promises can form ("Several names without deadlock" in
	//     docs/design.md).
	//
	// h describes the holder of the first key that refused, its Ahead
	// counted in that key's line.
	AcquireAllInLine(ctx context.Context, keys []string, token string, ttl time.Duration) (ok bool, h Holder, err error)
	// LeaveLines is LeaveLine for every key of the set: the call ranked as
	// token leaves their lines, and each key promised to it passes on.
	LeaveLines(ctx context.Context, keys []string, token string) error
}
