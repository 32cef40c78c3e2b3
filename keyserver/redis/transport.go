package redis

import (
	"context"
	"time"
)

// Transport is what the Server needs from a Redis client: to run a
// command and read its reply, to read an error reply's text, and to open a
// Pub/Sub connection; no lock logic. Implement it to run the Server over a
// Redis client this module does not ship (keyserver/goredis is an example
// of about a hundred lines); FromURL and New use redigo transports of
// their own (internal/redigotransport).
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
// incarnation (INFO: see Server.Incarnation, what the redlock client's
// quarantine of restarted servers asks after every grant) again only once
// a new connection was opened, instead of at every ask: a restart breaks
// every connection, so a command after it runs on a new one. An
// uncontended lock then costs Redis four commands, not five. The count
// must miss no connection that carries commands, or a restart can go
// unseen.
type ConnectionCounter interface {
	// Connections returns how many connections the transport has opened,
	// and false when it cannot tell: then the Server reads INFO at every
	// ask.
	Connections() (opened int64, ok bool)
}

// commandStarter is an optional interface of a Transport: one that can
// send a command without a goroutine of the caller's waiting for its
// reply, as FromURL's pipelined transport does. A Server over it starts
// the redlock client's calls (see Server.Start); over any other, the
// client makes them with the blocking methods. It is internal plumbing of
// this module's redlock client, and no Transport of another client needs
// it.
//
// StartCommand queues the command whose words are cmd, keys and args, as
// Do takes them, bounded by deadline, and reports whether it did: false,
// having called nothing, when the transport cannot take it now (a
// pipeline full, too many words). When it returns true, to.Answer is
// called exactly once, maybe before StartCommand returns, with the reply
// or error Do would have returned, from the goroutine that reads the
// reply (Answer must not block). It copies the words before it returns.
type commandStarter interface {
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
