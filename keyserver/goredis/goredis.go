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
// Every call returns when its context ends, whatever the client's options.
// go-redis bounds a socket read by the context's deadline only when the
// client was made with ContextTimeoutEnabled, and never by cancellation, so
// a call whose context ends first leaves the command running in the
// background until go-redis gives up on it (by its ReadTimeout, 3 s by
// default). Close waits for those; setting ContextTimeoutEnabled makes them
// end at the context's deadline too.
package goredis

import (
	"context"
	"errors"
	"net"

	goredis "github.com/redis/go-redis/v9"

	"github.com/goredlock/goredlock/keyserver/redis"
	"github.com/goredlock/goredlock/keyserver/redis/adapt"
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
// five.
func New(client goredis.UniversalClient, opts ...redis.Option) *redis.Server {
	t := transport{c: client}
	if c, ok := client.(*goredis.Client); ok {
		t.DialCount = new(redis.DialCount)
		c.AddHook(dialCount{t.DialCount})
	}
	return redis.NewServer(adapt.Detach(t), opts...)
}

// transport is a redis.Transport over a go-redis client. Its DialCount,
// for a client whose dials New hooks, is the count of the client's
// connections (redis.ConnectionCounter); nil for the others.
type transport struct {
	c goredis.UniversalClient
	*redis.DialCount
}

// dialCount is the hook that counts a client's connections: every one, for
// commands and for Pub/Sub, including those the pool opens on its own
// (MinIdleConns), passes through the client's dial hooks.
type dialCount struct{ n *redis.DialCount }

func (d dialCount) DialHook(next goredis.DialHook) goredis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := next(ctx, network, addr)
		d.n.Dialed(err)
		return conn, err
	}
}

func (dialCount) ProcessHook(next goredis.ProcessHook) goredis.ProcessHook { return next }

func (dialCount) ProcessPipelineHook(next goredis.ProcessPipelineHook) goredis.ProcessPipelineHook {
	return next
}

// Do runs one command. go-redis routes it in a Cluster by its own table
// of where each command keeps its keys.
func (t transport) Do(ctx context.Context, cmd, keys []string, args ...string) (any, error) {
	words := make([]any, 0, len(cmd)+len(keys)+len(args))
	for _, part := range [][]string{cmd, keys, args} {
		for _, w := range part {
			words = append(words, w)
		}
	}
	reply, err := t.c.Do(ctx, words...).Result()
	if errors.Is(err, goredis.Nil) {
		return nil, nil
	}
	return reply, err
}

// ReplyText reads a go-redis error reply.
func (transport) ReplyText(err error) (string, bool) {
	var reply goredis.Error
	if errors.As(err, &reply) && !errors.Is(err, goredis.Nil) {
		return reply.Error(), true
	}
	return "", false
}

// Close leaves the caller's client open.
func (transport) Close() error { return nil }
