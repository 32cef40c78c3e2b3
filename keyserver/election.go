package keyserver

import (
	"context"
	"time"
)

// Elector is a KeyServer that also keeps elections: a lock-like key that
// stores its holder's value beside its token, which anyone can read, and
// whose changes a server announces.
//
// The leader's term is a fencing token (see Fencer): AcquireLeader reads
// the election's fence counter with the vote, and the client raises it on
// a quorum before it leads, so that every leadership's term is greater
// than every earlier one's.
//
// Keys: the client passes "{name}:election" (name keeps its own hash tag,
// if it has one, and the suffix follows it), whose fence counter is that
// key's; a server keeps the leader under keys of its own beside it, apart
// from lock keys.
type Elector interface {
	Fencer
	// AcquireLeader stores token and value as key's leader with the TTL
	// if key is free, or renews it (with value) if token holds it, and
	// reads the fence counter of key in the same step, whatever the
	// vote.
	AcquireLeader(ctx context.Context, key, token, value string, ttl time.Duration) (ok bool, fence uint64, err error)
	// ExtendLeader resets the TTL of key if token leads, or stores token
	// and value again if key is free (a restarted server). False if
	// another token leads.
	ExtendLeader(ctx context.Context, key, token, value string, ttl time.Duration) (bool, error)
	// ReleaseLeader frees key if token leads, and reports whether it did.
	ReleaseLeader(ctx context.Context, key, token string) (bool, error)
	// ReadLeader returns key's leader on this server: the zero Leadership
	// when nobody leads.
	ReadLeader(ctx context.Context, key string) (Leadership, error)
	// WatchLeader watches key: changed is closed at the next change of
	// its leader on this server (a new leader, a new value, a release),
	// or when the watch broke. A leader left to expire is not announced:
	// watchers look again by its TTL. stop ends the watch and must be
	// called exactly once; ctx bounds only the setting up.
	WatchLeader(ctx context.Context, key string) (changed <-chan struct{}, stop func(), err error)
}

// Leadership is an election's leader as one server holds it.
type Leadership struct {
	Token string        // "" when nobody leads
	Value string        // the value stored beside the token (AcquireLeader's value)
	Left  time.Duration // the TTL the leader's key has left
}
