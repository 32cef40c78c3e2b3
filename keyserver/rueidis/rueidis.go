// Package rueidis is a KeyServer over a rueidis (github.com/redis/rueidis)
// client, for services that already talk to Redis through rueidis and want
// their locks on the same auto-pipelined connections and hooks:
//
//	var servers []keyserver.KeyServer
//	for _, c := range []rueidis.Client{c1, c2, c3} { // three independent masters
//		s := rueidisks.New(c)
//		defer s.Close() // before c.Close: waits for calls still in flight
//		servers = append(servers, s)
//	}
//	client, err := redlock.New(servers)
//
// The package has the name of its directory, like keyserver/redis; as the
// rueidis client's own package is named rueidis too, import this one under
// another name (the examples use rueidisks: "rueidis key server").
//
// Any rueidis.Client will do, and each counts as ONE key server: a single
// node, a Sentinel-managed master (ClientOption.Sentinel) or a Redis Cluster
// (rueidis finds out by itself). Sentinel and Cluster replicate
// asynchronously, so a failover can lose a key that was just written: that
// is one server forgetting a lock, which Redlock tolerates only in a
// minority of its servers. For a lock that survives failovers, give
// redlock.New several independent deployments, not one deployment's nodes.
//
// Each operation is one Lua script (the same text as the other Redis key
// servers, so they share script cache entries), run by EVALSHA and by EVAL
// when the server's script cache is empty (after a restart or SCRIPT
// FLUSH). rueidis pipelines the calls of concurrent goroutines onto shared
// connections by itself. A key holding another type of value is reported as
// an error and left untouched.
//
// A Server is a keyserver.Fencer, for redlock.WithFencing: the fence
// counter of a lock key lives under keyserver.FenceKey(key), in the key's
// hash slot, so the script that reads it with the vote runs on a Cluster
// too. The counters are the ones the other Redis key servers keep, so
// servers of different kinds over one Redis share them.
//
// A Server is also a keyserver.Notifier: AcquireOrHolder reports with a
// refusal how long the holder has left and how it ranks, and Watch tells a waiter when the
// key is released, over one dedicated connection per Server whatever the
// number of waiters (see Watch).
//
// Every call returns when its context ends. rueidis bounds a command by the
// context's deadline, but not always by its cancellation: a command that
// has a connection to itself waits for the deadline, and the commands
// queued behind it on that connection wait with it. Such commands finish in
// the background, and Close waits for them.
package rueidis

import (
	"errors"
	"sync"

	"github.com/redis/rueidis"

	"github.com/goredlock/goredlock/internal/redisscript"
	"github.com/goredlock/goredlock/keyserver"
)

// Server is a KeyServer over one rueidis client. It is safe for concurrent
// use.
type Server struct {
	client rueidis.Client
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
// default is the address of the nodes the client knows when New is called:
// the node of a single-node client, the master of a Sentinel client at that
// moment, the nodes of a Cluster (comma-separated).
func WithName(name string) Option { return func(c *config) { c.name = name } }

// New returns a Server over client. The caller keeps ownership of client and
// closes it after the Server's Close has returned.
func New(client rueidis.Client, opts ...Option) *Server {
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
var ErrClosed = errors.New("rueidis key server: closed")

// ErrConnectionLost is returned by a Watch whose subscriber connection
// broke before Redis confirmed the subscription, twice in a row.
var ErrConnectionLost = errors.New("rueidis key server: subscriber connection lost")

// String returns the server's name.
func (s *Server) String() string { return s.name }

// Close waits for the commands still running, including those whose call
// already returned because its context ended, wakes every waiter of Watch
// and waits for the subscriber's goroutine, and makes later calls fail
// with ErrClosed. It does not close the rueidis client, which belongs to
// the caller. Close the redlock client first (it waits for the calls it left
// running), then the Server, then the rueidis client. It is safe to call
// more than once.
func (s *Server) Close() error {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.inflight.Wait()
	s.sub.close()
	return nil
}

// The scripts are parsed once: rueidis.Lua keeps the SHA-1 that EVALSHA
// needs.
var (
	setScript    = rueidis.NewLuaScript(redisscript.Set)
	delScript    = rueidis.NewLuaScript(redisscript.Del)
	fencedScript = rueidis.NewLuaScript(redisscript.AcquireFenced)
	raiseScript  = rueidis.NewLuaScript(redisscript.RaiseFence)
	holderScript = rueidis.NewLuaScript(redisscript.AcquireOrHolder)
)
