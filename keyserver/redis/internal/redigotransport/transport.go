// Package redigotransport is the redigo machinery beneath keyserver/redis's
// FromURL and New: the transports that carry a Server's commands over
// redigo connections, and nothing of the lock logic.
//
// [Pipelined], FromURL's, sends every call over one connection (see
// pipeline.go); [Pooled], New's and FromURL's with WithPooledConnections,
// runs a call on a connection of its own from a pool, and New's pipelines
// the calls made while others are in flight over one connection borrowed
// from the caller's pool. Both read error replies and open Pub/Sub
// connections. keyserver/redis reaches them through its Transport
// interface, and Pipelined's StartCommand through the optional interface
// of a transport that can send a command without its caller waiting for
// the reply.
//
// The package knows neither the Server nor the redlock client's clock: a
// context whose timer is armed only once something waits on its Done is
// recognised by its method Unarmed (see lazyContext).
package redigotransport

import (
	"context"
	"errors"
	"time"

	redigo "github.com/gomodule/redigo/redis"

	"github.com/goredlock/goredlock/internal/check"
)

// The errors of the transports, which keyserver/redis exports under the
// same names (and documents).
var (
	// ErrClosed fails the calls still queued when a transport is closed.
	ErrClosed = check.Permanent(errors.New("redis: server closed"))
	// ErrOverloaded fails at once a call to a pipeline that holds its
	// maximum of calls.
	ErrOverloaded = errors.New("redis: too many calls waiting for this server")
	// ErrConnectionLost fails the calls a connection had sent when it
	// broke, or was closed for not answering.
	ErrConnectionLost = errors.New("redis: connection lost before the reply (the call may have run)")
)

// Pool hands out connections: keyserver/redis's Pool.
type Pool interface {
	GetContext(ctx context.Context) (redigo.Conn, error)
}

// Handler receives the events of a Pub/Sub connection, one at a time:
// keyserver/redis's PubSubHandler, whose methods it has.
type Handler interface {
	Message(channel, payload string)
	Subscribed(channel string)
	Unsubscribed(channel string)
	Broken(err error)
}

// Subscription is one Pub/Sub connection: keyserver/redis's PubSub, whose
// methods it has.
type Subscription interface {
	Subscribe(ctx context.Context, channel string) error
	Unsubscribe(ctx context.Context, channel string) error
	Close() error
}

// Answerer takes the reply of a command sent by StartCommand, on the
// goroutine that reads it; Answer must not block.
type Answerer = interface{ Answer(reply any, err error) }

// Pipelined is FromURL's transport: every call on one connection (see
// pipeline.go), which also confirms writes with WAIT where it was made to
// (see confirm.go).
type Pipelined struct {
	*pipeline
	pubSub
}

// StartCommand queues the command whose words are cmd, keys and args, as
// Do takes them, bounded by deadline, and hands its reply, as Do would
// return it, to to.Answer once (maybe before StartCommand returns), from
// the goroutine that reads it, instead of a caller waiting for it. It
// reports whether it queued the command: false, having called nothing,
// when the pipeline holds its maximum of calls or the command has too
// many words. The words are copied. This is keyserver/redis's optional
// interface of a transport that starts commands (commandStarter), through
// which its Server starts the redlock client's calls.
func (t *Pipelined) StartCommand(cmd, keys, args []string, deadline time.Time, to Answerer) bool {
	c, ok := newCall(cmd, keys, args)
	if !ok {
		return false
	}
	return t.start(c, deadline, to)
}

// Connections returns how many connections the pipeline has opened: every
// one that carried commands (keyserver/redis's ConnectionCounter).
func (t *Pipelined) Connections() (int64, bool) { return t.dials.Load(), true }

// Close ends the pipeline: calls still queued fail with ErrClosed.
func (t *Pipelined) Close() error {
	t.stop()
	return nil
}
