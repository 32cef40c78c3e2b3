// Package goredis is a KeyServer over a go-redis (github.com/redis/go-redis/v9)
// client, for services that already talk to Redis through go-redis and want
// their locks on the same connections, hooks and tracing:
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
// when a shard misses its heartbeats the ring moves that shard's keys to the
// others, where a second holder can take a lock the first shard still holds.
//
// Each operation is one Lua script (the same text as the redigo key server,
// so they share script cache entries), run by EVALSHA and by EVAL when the
// server's script cache is empty (after a restart or SCRIPT FLUSH). The
// scripts are idempotent, so go-redis's own retries of a broken connection
// are harmless. A key holding another type of value is reported as an error
// and left untouched.
//
// A Server is a keyserver.Fencer, for redlock.WithFencing: the fence
// counter of a lock key lives under keyserver.FenceKey(key), in the key's
// hash slot, so the script that reads it with the vote runs on a Cluster
// too. The counters are the ones the other Redis key servers keep, so
// servers of different kinds over one Redis share them.
//
// A Server is also a keyserver.Notifier: AcquireOrHolder reports with a
// refusal how long the holder has left and how it ranks, and Watch tells a waiter when the
// key is released, over one go-redis PubSub per Server whatever the number
// of waiters (see Watch).
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
	"errors"
	"sync"

	"github.com/redis/go-redis/v9"

	"github.com/goredlock/goredlock/internal/redisscript"
	"github.com/goredlock/goredlock/keyserver"
)

// Server is a KeyServer over one go-redis client. It is safe for concurrent
// use.
type Server struct {
	client redis.UniversalClient
	name   string

	mu       sync.Mutex
	closed   bool
	inflight sync.WaitGroup // commands running, also after their call returned

	sub *subscriber // Watch's
}

var _ keyserver.Fencer = (*Server)(nil)

// Option configures a Server.
type Option func(*config)

type config struct {
	name string
}

// WithName sets how errors name this server, e.g. "orders-redis-1". The
// default is read from the client's options: the address of a single node,
// "cluster " and the seed addresses of a Cluster, "sentinel" for a failover
// client, or "redis" when the client's options cannot be read.
func WithName(name string) Option { return func(c *config) { c.name = name } }

// New returns a Server over client. The caller keeps ownership of client and
// closes it after the Server's Close has returned.
func New(client redis.UniversalClient, opts ...Option) *Server {
	var c config
	for _, o := range opts {
		o(&c)
	}
	if c.name == "" {
		c.name = defaultName(client)
	}
	return &Server{client: client, name: c.name, sub: newSubscriber(client)}
}

// ErrClosed is returned by calls on a Server whose Close has been called.
var ErrClosed = errors.New("goredis: server closed")

// ErrConnectionLost is returned by a Watch whose subscriber connection
// broke before Redis confirmed the subscription, twice in a row.
var ErrConnectionLost = errors.New("goredis: subscriber connection lost")

// String returns the server's name.
func (s *Server) String() string { return s.name }

// Close waits for the commands still running, including those whose call
// already returned because its context ended, wakes every waiter of Watch
// and waits for the subscriber's goroutines, and makes later calls fail
// with ErrClosed. It does not close the go-redis client, which belongs to
// the caller. Close the redlock client first (it waits for the calls it left
// running), then the Server, then the go-redis client. It is safe to call
// more than once.
func (s *Server) Close() error {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.inflight.Wait()
	s.sub.close()
	return nil
}

// The scripts are parsed once: redis.Script keeps the SHA-1 that EVALSHA
// needs.
var (
	setScript    = redis.NewScript(redisscript.Set)
	delScript    = redis.NewScript(redisscript.Del)
	fencedScript = redis.NewScript(redisscript.AcquireFenced)
	raiseScript  = redis.NewScript(redisscript.RaiseFence)
	holderScript = redis.NewScript(redisscript.AcquireOrHolder)
)
