// Package keyserver defines what the Redlock client needs from each of its
// independent key servers: three owner-checked operations on a key with a
// time to live.
//
// A [KeyServer] must be safe for concurrent use and must honour the context's
// deadline and cancellation: the client bounds every call by its per-server
// timeout and counts a late answer as no answer. Implementations live in the
// sub-packages redis (production), memory (one process) and static (scripted
// replies for unit tests); package keyservertest holds the conformance suite
// every implementation, including a user's own, should pass:
//
//	func TestConformance(t *testing.T) {
//		keyservertest.Run(t, func(t *testing.T) keyserver.KeyServer {
//			return mystore.New()
//		})
//	}
//
// A reply of false with a nil error means "another token holds the key"; an
// error means the server could not answer. The client counts both as a vote
// against, but reports them differently. Optional abilities ([Notifier],
// [Fencer], [HoldKeeper], [InProcess], ...) are interfaces of their own, which
// the client finds by a type assertion. One of them, [Incarnator], tells
// which store a server reaches and since when: the client counts each
// store once by it, and quarantines a store that restarted empty.
package keyserver

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/goredlock/goredlock/internal/layout"
)

// KeyServer is one independent store of lock keys.
type KeyServer interface {
	// Acquire stores key=token with the TTL if key is absent, or resets the
	// TTL if key already holds token (so a retried Acquire is harmless).
	// It reports whether key now holds token.
	Acquire(ctx context.Context, key, token string, ttl time.Duration) (bool, error)
	// Extend resets key's TTL if key holds token; if key is absent (a
	// restarted server) it stores it again. False if another token holds it.
	Extend(ctx context.Context, key, token string, ttl time.Duration) (bool, error)
	// Release deletes key only if it holds token, and reports whether it did.
	Release(ctx context.Context, key, token string) (bool, error)
}

// ErrInvalidArgument is returned, wrapped, for an empty key or token, or a
// TTL under one millisecond. The redlock package returns the same value for
// its own bad input, so one errors.Is test covers both.
var ErrInvalidArgument = errors.New("invalid argument")

// ErrPermanent marks a server failure that trying again cannot fix: a key
// holding another type of value, a password the server rejects, a script it
// refuses to run. The client stops retrying once such failures leave too
// few servers for a quorum. Mark an error by wrapping it with this one too:
//
//	fmt.Errorf("%w: %w", keyserver.ErrPermanent, err)
var ErrPermanent = errors.New("permanent failure")

// CheckKey, CheckToken and CheckTTL validate the arguments of a KeyServer
// call, so that every implementation refuses the same input with the same
// error: an empty key, an empty token, a TTL under a millisecond (TTLs
// have millisecond precision).
func CheckKey(key string) error {
	if key == "" {
		return fmt.Errorf("%w: empty key", ErrInvalidArgument)
	}
	return nil
}

// CheckToken validates a call about key and token: Release, LeaveLine,
// WatchTurn. See CheckKey.
func CheckToken(key, token string) error {
	if err := CheckKey(key); err != nil {
		return err
	}
	if token == "" {
		return fmt.Errorf("%w: empty token for key %q", ErrInvalidArgument, key)
	}
	return nil
}

// CheckTTL validates a call that stores token under key for ttl: Acquire,
// Extend and their variants. See CheckKey.
func CheckTTL(key, token string, ttl time.Duration) error {
	if err := CheckToken(key, token); err != nil {
		return err
	}
	if ttl < layout.MinTTL {
		return fmt.Errorf("%w: ttl %v for key %q is under %v", ErrInvalidArgument, ttl, key, layout.MinTTL)
	}
	return nil
}

// InProcess is implemented by key servers that answer every call at once,
// on the caller's goroutine and without I/O, such as the in-process memory
// server. The client then calls them directly, one after another, with no
// goroutine, deadline or channel of its own: a lock on such servers costs
// little more than the map operations. A server that can block, even on a
// mutex held across I/O, must not implement it, and neither must a wrapper
// that can block (embed the KeyServer interface, not the server, so that
// the method is not promoted).
type InProcess interface {
	KeyServer
	// InProcess does nothing: it only marks the server as one that never
	// blocks, since no method could prove that.
	InProcess()
}
