package redis

import (
	"context"
	"time"
)

// Transport is what the Server needs from a Redis client: to run a
// command and read its reply, to read an error reply's text, and to open a
// Pub/Sub connection; no lock logic. Implement it to run the Server over a
// Redis client this module does not ship (keyserver/goredis is an
// example); FromURL and New use redigo transports of their own.
//
// Every method must honour ctx: return when it ends, even if the command
// then still runs (the Server counts such a call as failed, and the lock
// scripts are safe to run late). A transport that starts goroutines of its
// own waits for them in Close.
type Transport interface {
	// Do runs the command whose words are cmd, then keys, then args (keys
	// are told apart so that a Cluster client can route the command by
	// them), and returns its reply: an int64, a string, nil for a nil
	// reply (an absent key), or a []any of those. An error reply is
	// returned as an error that ReplyText reads.
	Do(ctx context.Context, cmd []string, keys []string, args ...string) (any, error)
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

// ConnectionCounter is implemented by a Transport that counts the
// connections it opens to its Redis. A Server over it reads its Redis's
// incarnation (see Server.Incarnation) again only once a new connection was
// opened, not after every grant: a restart breaks every connection, so a
// command after it runs on a new one. The count must miss no connection
// that carries commands, or a restart can go unseen.
type ConnectionCounter interface {
	// Connections returns how many connections the transport has opened,
	// and false when it cannot tell: then the Server reads INFO at every
	// ask.
	Connections() (opened int64, ok bool)
}

// commandStarter is an optional interface of a Transport (FromURL's, and
// keyserver/goredis's, which matches it without naming it: its
// TestStartedCalls fails if this changes) that sends a command with no
// goroutine of the caller's waiting for it, so that a Server over it starts
// calls (see "Started calls on Redis" in docs/design.md).
type commandStarter interface {
	// StartCommand queues a copy of Do's command, bounded by deadline, or
	// returns false having called nothing. Once queued, to.Answer gets Do's
	// reply exactly once, maybe before it returns, from the reader: it must not block.
	StartCommand(cmd, keys, args []string, deadline time.Time, to interface{ Answer(reply any, err error) }) bool
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
