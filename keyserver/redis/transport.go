package redis

import (
	"context"
	"time"
)

// Transport is what the Server needs from a Redis client: plain commands,
// with no lock logic. Implement it to run the Server over a Redis client
// this module does not ship (see keyserver/goredis for a short example);
// the redigo transports of this package, pooled and pipelined, are two more.
//
// Every method must honour ctx: return when it ends, even if the command
// then still runs (the Server treats such a call as failed, and the lock
// scripts are safe to run late). A transport that starts goroutines of its
// own waits for them in Close.
type Transport interface {
	// Eval runs a Lua script by its digest (EVALSHA) and, when the server
	// answers NOSCRIPT (or digest is ""), by its source (EVAL), and
	// returns its integer reply. keys and args are the script's KEYS and
	// ARGV; args hold strings and int64s.
	Eval(ctx context.Context, digest, src string, keys []string, args []any) (int64, error)
	// LoadScript runs SCRIPT LOAD src and returns the digest the server
	// names it by. The Server loads each script once and runs it by that
	// digest, so that no SHA-1 is computed on this side.
	LoadScript(ctx context.Context, src string) (digest string, err error)
	// SetNX runs SET key value NX PX ttl and reports whether it stored
	// value: false, nil when key exists.
	SetNX(ctx context.Context, key, value string, ttl time.Duration) (bool, error)
	// Get runs GET key: its value, and false when key is absent.
	Get(ctx context.Context, key string) (string, bool, error)
	// ReplyText returns the text of the Redis error reply err is or wraps
	// ("WRONGTYPE Operation against a key ..."), and false when err is no
	// error reply (a network failure, a timeout).
	ReplyText(err error) (string, bool)
	// PubSub opens a connection in subscribed mode whose events go to h,
	// from one goroutine, in the order they arrive.
	PubSub(ctx context.Context, h PubSubHandler) (PubSub, error)
	// Close releases what the transport opened itself; a client the caller
	// handed in stays open.
	Close() error
}

// PubSub is one Pub/Sub connection a Transport opened.
type PubSub interface {
	// Subscribe sends SUBSCRIBE channel without waiting: Redis's
	// confirmation reaches the handler's Subscribed.
	Subscribe(ctx context.Context, channel string) error
	// Unsubscribe sends UNSUBSCRIBE channel without waiting; the
	// confirmation reaches the handler's Unsubscribed.
	Unsubscribe(ctx context.Context, channel string) error
	// Close closes the connection and returns once the handler will be
	// called no more.
	Close() error
}

// PubSubHandler receives the events of a PubSub, one at a time. Its
// methods do not block.
type PubSubHandler interface {
	// Message is a message published on a subscribed channel.
	Message(channel, payload string)
	// Subscribed and Unsubscribed confirm a SUBSCRIBE or UNSUBSCRIBE of
	// channel, in the order they were sent.
	Subscribed(channel string)
	Unsubscribed(channel string)
	// Broken says the connection failed (or a command on it was refused):
	// nothing more arrives on it, and the transport must not reconnect or
	// resubscribe it on its own. It may come after Close; it comes once.
	Broken(err error)
}
