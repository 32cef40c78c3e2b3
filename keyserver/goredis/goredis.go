// Package goredis runs the Redis key server (keyserver/redis) over a
// go-redis (github.com/redis/go-redis/v9) client, for services that already
// talk to Redis through go-redis and want their locks on the same
// connections, hooks and tracing:
//
//	var servers []keyserver.KeyServer
//	for _, rdb := range []*redis.Client{rdb1, rdb2, rdb3} { // three independent masters
//		s := goredis.New(rdb)
//		defer s.Close() // before rdb.Close: waits for calls still in flight
//		servers = append(servers, s)
//	}
//	client, err := redlock.New(servers)
//
// Any redis.UniversalClient will do, and each counts as ONE key server: a
// single node (redis.NewClient), a Sentinel-managed master
// (redis.NewFailoverClient) or a Redis Cluster (redis.NewClusterClient).
// Sentinel and Cluster replicate asynchronously, so a failover can lose a
// key that was just written: that is one server forgetting a lock, which
// Redlock tolerates only in a minority of its servers. For a lock that
// survives failovers, give redlock.New several independent deployments, not
// one deployment's nodes. A redis.Ring is not one key server in this sense:
// when a shard misses its heartbeats the ring moves that shard's keys to
// the others, where a second holder can take a lock the first shard still
// holds.
//
// This package is only the transport: the scripts, the waiting line, the
// fencing counters and the classification of errors are keyserver/redis's,
// the same for every Redis client. The lock keys, lines and counters are
// thus shared with the other Redis key servers of this module.
//
// go-redis has no automatic pipelining: each command of its own checks a
// connection out of the pool (with a health-check read), writes and reads,
// a system call each. So the commands the server makes while others are
// on their way go together, as one go-redis pipeline, and a lock's calls
// are started on it with no goroutine waiting for each, as on FromURL's
// connections. The client's ProcessPipelineHook sees the commands, not its
// ProcessHook, under the context values of the pipeline's first command
// that a caller waits for, or none: a started call's context does not
// reach go-redis. Even so, go-redis costs 1.5 to 2 times the client CPU
// of FromURL's connection per lock (the figures are in the README).
//
// Every call returns when its context ends, whatever the client's options.
// go-redis bounds a socket read by the context's deadline only when the
// client was made with ContextTimeoutEnabled, and never by cancellation, so
// a call whose context ends first leaves the command running in the
// background until go-redis gives up on it (by its ReadTimeout, 3 s by
// default). Close waits for those; setting ContextTimeoutEnabled makes them
// end at the context's deadline too.
//
// A Redis that refuses connections fails the calls at the first refused
// dial, with its error ("connect: connection refused"), for a
// *redis.Client (see New); the redlock client then calls it no more than
// its probes. go-redis itself goes on with the pipeline it was sending:
// it dials DialerRetries times (5 by default) per attempt, 100 ms apart,
// and makes MaxRetries attempts more (3), logging each failed attempt
// through its own logger, which is the process's (redis.SetLogger; this
// package leaves it alone): a few lines a second while a server is dead.
// Options with DialerRetries 1 and MaxRetries -1 make it give up at the
// first refusal, with one line.
package goredis

import (
	"context"
	"errors"
	"net"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/goredlock/goredlock/internal/dialcount"
	"github.com/goredlock/goredlock/keyserver/redis"
)

// New returns a key server over client, named after the address in the
// client's options unless [redis.WithName] says otherwise. The caller keeps
// ownership of client: close the server first, which waits for the calls
// still in flight, then the client.
//
// A *redis.Client (a single node, or a Sentinel-managed master) is given a
// dial hook that counts its connections, so that the server reads its
// Redis's INFO again only after a new connection (see
// [redis.ConnectionCounter]): an uncontended lock then costs Redis four
// commands, as on FromURL's servers, where over other clients it costs
// five. The same hook hears of a failed dial: while the client has no
// connection, the calls waiting then fail at once with the dial's error
// ("connect: connection refused"), not by the end of their context after
// go-redis's own retries.
func New(client goredis.UniversalClient, opts ...redis.Option) *redis.Server {
	t := &transport{c: client, p: &pipeline{c: client}}
	if c, ok := client.(*goredis.Client); ok {
		t.dials = &dialWatch{client: c, failed: t.p.failAll}
		c.AddHook(t.dials)
	}
	return redis.NewServer(t, opts...)
}

// transport is a redis.Transport over a go-redis client. Its dials, for a
// client whose dials New hooks, count the client's connections
// (redis.ConnectionCounter); nil for the others.
type transport struct {
	c     goredis.UniversalClient
	p     *pipeline
	dials *dialWatch
}

// Connections is the count of the client's connections, for a client
// whose dials New hooks.
func (t *transport) Connections() (int64, bool) {
	if t.dials == nil {
		return 0, false
	}
	return t.dials.count.Connections()
}

// dialWatch is the hook that watches a client's dials: every one, for
// commands and for Pub/Sub, including those the pool opens on its own
// (MinIdleConns), passes through the client's dial hooks. It counts those
// that succeed, and hands the error of one that fails while the client
// holds no connection to failed.
type dialWatch struct {
	client *goredis.Client
	count  dialcount.Count
	failed func(error)
}

func (d *dialWatch) DialHook(next goredis.DialHook) goredis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := next(ctx, network, addr)
		d.count.Dialed(err)
		if err != nil && d.client.PoolStats().TotalConns == 0 {
			d.failed(err)
		}
		return conn, err
	}
}

func (*dialWatch) ProcessHook(next goredis.ProcessHook) goredis.ProcessHook { return next }

func (*dialWatch) ProcessPipelineHook(next goredis.ProcessPipelineHook) goredis.ProcessPipelineHook {
	return next
}

// Do runs one command, in the pipeline of the commands made at the same
// time. go-redis routes it in a Cluster by its own table of where each
// command keeps its keys.
func (t *transport) Do(ctx context.Context, cmd, keys []string, args ...string) (any, error) {
	return t.p.do(ctx, words(cmd, keys, args))
}

// StartCommand queues Do's command, in the same pipelines, and hands its
// reply to to.Answer from the sender's goroutine instead of a caller
// waiting for it, or returns false, having called nothing, once closed or
// when too many commands wait. It is keyserver/redis's optional interface
// of a transport that starts commands, through which a Server starts the
// redlock client's calls with no goroutine waiting for each (see "Started
// calls on Redis" in docs/design.md). A command not sent by deadline is
// not sent: it is answered with context.DeadlineExceeded.
func (t *transport) StartCommand(cmd, keys, args []string, deadline time.Time, to interface{ Answer(reply any, err error) }) bool {
	return t.p.start(words(cmd, keys, args), deadline, to)
}

// words returns a command's words as go-redis takes them.
func words(cmd, keys, args []string) []any {
	w := make([]any, 0, len(cmd)+len(keys)+len(args))
	for _, part := range [][]string{cmd, keys, args} {
		for _, s := range part {
			w = append(w, s)
		}
	}
	return w
}

// ReplyText reads a go-redis error reply.
func (*transport) ReplyText(err error) (string, bool) {
	var reply goredis.Error
	if errors.As(err, &reply) && !errors.Is(err, goredis.Nil) {
		return reply.Error(), true
	}
	return "", false
}

// Close waits for the commands still on their way, and leaves the
// caller's client open.
func (t *transport) Close() error {
	t.p.close()
	return nil
}
