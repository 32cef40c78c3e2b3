// Package redis is a [keyserver.KeyServer] over one Redis master.
//
// A production Redlock setup is 3 or 5 independent masters, one [Server]
// each:
//
//	var servers []keyserver.KeyServer
//	for _, u := range []string{"redis://10.0.0.1:6379", "redis://10.0.0.2:6379", "redis://10.0.0.3:6379"} {
//		s, err := redis.FromURL(u)
//		if err != nil { return err }
//		defer s.Close()
//		servers = append(servers, s)
//	}
//	client, err := redlock.New(servers)
//
// A Server reaches Redis through a [Transport], a thin adapter over a
// Redis client: [FromURL] and [New] use redigo; keyserver/goredis,
// keyserver/rueidis and keyserver/valkey (modules of their own) adapt the
// other clients, and [NewServer] takes any Transport. Every transport runs
// the same Lua scripts, one per operation, so that the owner check and the
// write are atomic and the waiters of all of them share one line. Script
// digests come from the server (SCRIPT LOAD): no SHA-1 is computed here,
// and a program that allows only FIPS 140 algorithms works.
//
// Every call honours its context's deadline, which the redlock client sets
// to its per-server timeout: a paused or unreachable server costs at most
// that long. Failures that retrying cannot fix (a key holding another type
// of value, a rejected password or permission, a script refused, a
// certificate not trusted) are marked with [keyserver.ErrPermanent], the
// same for every transport. After [Server.Close] every call fails with
// [ErrClosed].
//
// A FromURL Server pipelines its calls over one connection: calls made
// together share one write and one read, and reach Redis in the order they
// were made. A connection that breaks fails the calls it had sent with
// [ErrConnectionLost]; at most [WithMaxPending] calls wait for one server,
// and more fail with [ErrOverloaded]. How the pipeline, the scripts, the
// lines and the subscriber work: "The Redis key server" in docs/design.md.
package redis

import (
	"context"
	"fmt"

	redigo "github.com/gomodule/redigo/redis"

	"github.com/goredlock/goredlock/keyserver"
	"github.com/goredlock/goredlock/keyserver/redis/internal/redigotransport"
)

// Pool hands out connections; *redigo.Pool is one.
type Pool interface {
	// GetContext returns a connection, for one call or held by the
	// Server (its shared and Pub/Sub connections), which the Server gives
	// back with Close. It should end its wait when ctx does: a call waits
	// for a connection no longer than GetContext does.
	GetContext(ctx context.Context) (redigo.Conn, error)
}

// Option configures a Server.
type Option func(*config)

type config struct {
	name       string
	dialOpts   []redigo.DialOption
	maxActive  int
	pooled     bool
	maxPending int
	wait       *durability // WithWait, WithWaitAOF
}

// The defaults of WithPooledConnections's max and WithMaxPending (a few
// hundred bytes per call, so about a megabyte at most).
const (
	defaultActive     = 64
	defaultMaxPending = 4096
)

// WithName sets how errors name this server, e.g. its address; FromURL
// uses the URL's host and port by default.
func WithName(name string) Option { return func(c *config) { c.name = name } }

// WithDialOptions adds redigo dial options to the connections FromURL
// makes, e.g. redigo.DialTLSConfig for a private certificate authority.
func WithDialOptions(opts ...redigo.DialOption) Option {
	return func(c *config) { c.dialOpts = append(c.dialOpts, opts...) }
}

// WithPooledConnections makes FromURL, and New, run each call on a
// connection of its own from a redigo pool, instead of sharing one
// pipelined connection: for a proxy in front of Redis that does not allow
// pipelining, or to compare the two. FromURL's pool opens at most limit
// connections at once, if given (the last one; default 64): calls beyond
// it wait for a free connection within their deadline.
func WithPooledConnections(limit ...int) Option {
	return func(c *config) {
		c.pooled = true
		if len(limit) > 0 {
			c.maxActive = limit[len(limit)-1]
		}
	}
}

// WithMaxPending caps the calls a pipelined Server holds at once: queued,
// sent and not yet answered, including those whose callers gave up. Past
// it, calls fail at once with ErrOverloaded. Default 4096.
func WithMaxPending(n int) Option { return func(c *config) { c.maxPending = n } }

// New returns a Server over pool. The caller keeps ownership of pool.
//
// A call made while no other call of the Server is in flight runs on a
// connection of its own from pool, which it gives back once answered (a
// call whose context ends first closes its connection, which the pool
// then discards). Calls made while others are in flight share one
// connection instead, pipelined as FromURL's calls are (see Pipelining),
// which the Server borrows from pool when it first needs it and holds
// until it breaks or Close is called: a connection per call pays a write,
// a read and a wake-up per call, where the shared connection carries many
// calls per write and per read. With 64 callers on each of five nodes, a
// redlock client over New took 1.4 to 2.9 times redsync's locks per
// second over the same pools, and a connection per call 0.3 to 0.9 times
// (on a busy machine). Calls on different connections are not ordered: a
// call whose caller gave up may still run after a later one, as with a
// connection per call. The first WatchTurn takes one more connection for
// the Server's subscriber and keeps it the same way (see the package
// doc), so the Server holds at most three of pool's connections at once.
// WithMaxPending bounds the calls of the shared connection (below 1: the
// default).
//
// The Server cannot see pool's dials, so it reads its Redis's INFO after
// every grant, to learn whether the Redis restarted (the quarantine of
// package redlock): a fifth command per lock, and a third round trip for a
// caller alone. A pool counted by CountDials before its first use spares
// both, as FromURL's own connections do.
//
// WithPooledConnections keeps every call on a connection of its own, as
// New did before it shared one: for a proxy that does not allow
// pipelining, or a pool whose size is meant to bound the calls in flight.
// Connections from pool must implement redigo.ConnWithContext and
// redigo.ConnWithTimeout, as a redigo.Pool's do.
func New(pool Pool, opts ...Option) *Server {
	c := config{}
	for _, o := range opts {
		o(&c)
	}
	if c.maxPending < 1 {
		c.maxPending = defaultMaxPending
	}
	t := pooledTransport{redigotransport.Borrow(pool, c.pooled, c.maxPending)}
	opts = append([]Option{WithName("redis")}, opts...)
	return NewServer(t, opts...)
}

// FromURL's and New's transports are redigo machinery of their own
// (internal/redigotransport), which knows nothing of the Server; these
// adapt them to Transport, whose Pub/Sub types are this package's. The
// pipelined one also starts commands (see commandStarter).
type (
	pipelinedTransport struct{ *redigotransport.Pipelined }
	pooledTransport    struct{ *redigotransport.Pooled }
)

func (t pipelinedTransport) PubSub(ctx context.Context, h PubSubHandler) (PubSub, error) {
	return t.Pipelined.PubSub(ctx, h)
}

func (t pooledTransport) PubSub(ctx context.Context, h PubSubHandler) (PubSub, error) {
	return t.Pooled.PubSub(ctx, h)
}

// newOwned returns the Server FromURL makes, over connections it dials to
// u: pipelined, or pooled with WithPooledConnections.
func newOwned(u *redigotransport.URL, c config) (*Server, error) {
	if c.wait != nil {
		if err := c.wait.check(); err != nil {
			return nil, err
		}
		if c.pooled {
			return nil, fmt.Errorf("%w: wait and waitaof need the pipelined connection: WAIT confirms the writes of its own connection, and WithPooledConnections spreads them", keyserver.ErrInvalidArgument)
		}
	}
	var t Transport
	if c.pooled {
		t = pooledTransport{u.Pooled(c.dialOpts, c.maxActive)}
	} else {
		if c.maxPending == 0 {
			c.maxPending = defaultMaxPending
		}
		if c.maxPending < 1 {
			return nil, fmt.Errorf("%w: max pending calls %d is below 1", keyserver.ErrInvalidArgument, c.maxPending)
		}
		var confirm redigotransport.Confirming
		if c.wait != nil {
			confirm = c.wait.confirming()
		}
		t = pipelinedTransport{u.Pipelined(c.dialOpts, c.maxPending, confirm)}
	}
	return NewServer(t, WithName(c.name), func(o *config) { o.wait = c.wait }), nil
}
