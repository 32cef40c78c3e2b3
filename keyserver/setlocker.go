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
}

// CheckKeys validates a call about the set keys: at least one key, none
// empty, and with ttl > 0 a TTL of at least MinTTL (see CheckTTL).
func CheckKeys(keys []string, token string, ttl time.Duration) error {
	if len(keys) == 0 {
		return CheckKey("")
	}
	for _, k := range keys {
		if err := CheckToken(k, token); err != nil {
			return err
		}
		if ttl > 0 {
			if err := CheckTTL(k, token, ttl); err != nil {
				return err
			}
		}
	}
	return nil
}
