package keyserver

import (
	"context"
	"time"
)

// RWLocker is a KeyServer that also keeps read-write locks: many readers
// or one writer.
//
// On each server a read-write key holds either one writer's token or a set
// of readers' tokens, each reader with its own TTL, so that readers are
// extended and released one by one. A server grants a read hold when no
// writer holds the key and no writer waits there, and a write hold when
// nobody holds it. A reader and a writer, or two writers, can therefore
// never both hold a quorum: two majorities share a server, and that server
// refuses whichever of them came second.
//
// A writer that is refused and will wait (AcquireWrite with wait) leaves a
// mark on the key that keeps new readers out for WriterWaitTTL, renewed by
// each of its attempts, so that a stream of readers cannot starve it;
// readers that hold go on being extended. A mark is the caller's rank
// (see Notifier), or its token when that carries none: the attempts of one
// call renew one mark, and a granted write hold takes its own mark away.
// A writer that stopped waiting keeps readers out no longer than
// WriterWaitTTL.
//
// Keys: the client passes "{name}:rw"; a server keeps the holds under keys
// of its own beside it, apart from lock keys.
type RWLocker interface {
	KeyServer
	// AcquireRead adds token to the readers of key with the TTL (or renews
	// it) unless a writer holds the key or waits for it. Refused, h.Left
	// is how long the writer's hold, or its waiting mark, has left.
	AcquireRead(ctx context.Context, key, token string, ttl time.Duration) (ok bool, h Holder, err error)
	// AcquireWrite stores token as key's writer with the TTL (or renews
	// it) if nobody holds the key. Refused with wait, it marks a writer
	// waiting (see above). Refused, h.Left is how long the soonest hold
	// has left.
	AcquireWrite(ctx context.Context, key, token string, ttl time.Duration, wait bool) (ok bool, h Holder, err error)
	// ExtendHold resets the TTL of token's hold of key, a write hold if
	// write, else a read hold; one that is gone (a restarted server) is
	// stored again when AcquireRead or AcquireWrite would grant it
	// without waiting marks. False if it cannot be.
	ExtendHold(ctx context.Context, key, token string, ttl time.Duration, write bool) (bool, error)
	// ReleaseHold ends token's hold of key and reports whether it held.
	ReleaseHold(ctx context.Context, key, token string, write bool) (bool, error)
	// WatchHolds watches key for the waiting call that token belongs to,
	// a writer if write: changed is closed when a release of a hold of it
	// on this server reaches the call, or when the watch broke. A server
	// may wake only the earliest watcher at each release (and keep the
	// lock for it a moment: a Redis key server does), unless that is a
	// reader: then every watcher, since readers share. A call granted on
	// the server stops being a watcher there. A server may forget a watch that was not set again within
	// keyserver.LineTTL, as WatchPermits may. stop ends the watch and
	// must be called exactly once; ctx bounds only the setting up.
	WatchHolds(ctx context.Context, key, token string, write bool) (changed <-chan struct{}, stop func(), err error)
}

// WriterWaitTTL is how long a waiting writer's mark keeps new readers out
// after its last attempt: writers try again well within it, and one that
// died blocks readers no longer than this.
const WriterWaitTTL = time.Second
