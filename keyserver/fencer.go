package keyserver

import (
	"context"
	"time"
)

// Fencer is a KeyServer that also keeps the per-name counters fencing
// tokens are made of: numbers that grow with every grant of a lock, which
// the storage a lock protects checks so that a holder that lost its lock
// cannot write after the next one took it. The redlock client asks for it
// with WithFencing, and then needs every server to implement it.
//
// A counter is kept beside the key ("{key}:fence", or "key:fence" when key
// has a hash tag of its own: in its Cluster slot), with no TTL: it
// outlives the lock key and must survive as long as the lock's name is in
// use. A server that restarts empty loses its counters (docs/design.md,
// "Fencing across a quorum", says what that costs and what persistence
// avoids it).
type Fencer interface {
	KeyServer
	// AcquireFenced is Acquire, and reads key's fence counter (0 when
	// there is none) in the same step, whatever the vote.
	AcquireFenced(ctx context.Context, key, token string, ttl time.Duration) (ok bool, fence uint64, err error)
	// RaiseFence sets key's fence counter to fence if it holds less, and
	// returns the counter as it was before: a value of fence or more means
	// the counter was left alone.
	RaiseFence(ctx context.Context, key string, fence uint64) (prev uint64, err error)
}

// MaxFence is the largest fence counter a key server must keep: Redis's
// Lua numbers are exact up to 2^53, and AcquireFenced's reply doubles the
// counter. A lock granted a million times a second reaches it after 71
// years.
const MaxFence = 1<<51 - 1
