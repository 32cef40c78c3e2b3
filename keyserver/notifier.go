package keyserver

import (
	"context"
	"time"
)

// Notifier is a KeyServer that can tell a waiting client when a key is
// released, so that the client waits for the release instead of polling,
// and that reports, with a refusal, how long the holder's key has left, so
// that a waiter never sleeps past an expiry (holders that crash, and
// clients of other libraries, publish nothing).
type Notifier interface {
	KeyServer
	// AcquireOrTTL is Acquire that, when another token holds key, also
	// returns how long that key has left to live on this server (0 when
	// unknown, such as a key with no TTL).
	AcquireOrTTL(ctx context.Context, key, token string, ttl time.Duration) (ok bool, left time.Duration, err error)
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
