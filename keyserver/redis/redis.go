// Package redis is a KeyServer over one Redis master.
//
// A production Redlock setup is 3 or 5 independent masters, one Server
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
// Each operation is one Lua script, so that the owner check and the write
// are atomic; scripts run by EVALSHA, falling back to EVAL when the
// server's script cache is empty (after SCRIPT FLUSH). Acquire first sends
// a plain SET NX, which costs Redis a fraction of a script, and runs its
// script only when the key exists (so a refused Acquire takes two round
// trips). Every call honours the context's deadline, which the redlock
// client sets to its per-server timeout: a paused or unreachable server
// costs at most that long. A key holding another type of value is
// reported as an error and left untouched, and marked with
// keyserver.ErrPermanent, as retrying cannot fix it: errors.Is(err,
// keyserver.ErrPermanent) tells it from an outage.
//
// # Pipelining
//
// A Server made by FromURL sends all its calls over one connection: calls
// made at the same time are written together in one flush and their
// replies read back in order, so under load many calls share one write and
// one read, and no goroutine is started per call. A caller whose deadline
// passes returns at once; its call still runs, and its reply is read and
// dropped. Calls reach Redis in the order they were made, so a Release
// made after an Acquire runs after it even when the Acquire's caller gave
// up on it, unless the connection broke in between.
//
// Each new connection loads the scripts (SCRIPT LOAD) ahead of its first
// call, without waiting for the answer, so a call queued on a server that
// is paused runs, as sent, when the server resumes. (Opening a connection
// with a password, a database or TLS takes a round trip, so a paused
// server gets a new connection only if it resumes within 5 s.)
//
// A connection that breaks is replaced by the next call; the calls it had
// sent fail with ErrConnectionLost, since each may or may not have run. A
// connection whose oldest unanswered call is still unanswered 5 s past
// that call's deadline (a black-holed link; a call without a deadline
// counts as due 10 s after it was made) is closed and replaced the same
// way. At most WithMaxPending calls (4096 by default) wait for one server
// at once, including calls whose callers gave up; more fail at once with
// ErrOverloaded.
//
// New runs each call on a connection of its own taken from the caller's
// Pool, as FromURL does with WithPooledConnections.
//
// # Waiting for a release
//
// A Server is a keyserver.Notifier. Release publishes, from the script that
// deleted the key, with the key as the message, on a channel in the key's
// Cluster slot: a key with a hash tag of its own followed by ":released",
// any other in braces ("{job}:7" on "{job}:7:released", "job" on
// "{job}:released"). Every Redis key server of this module runs the same
// script, so releases by any of them wake the waiters of all of them.
// AcquireOrHolder is Acquire that, when it refuses, also reads the
// holder's PTTL, so that a waiter never sleeps past an expiry (keys of
// crashed holders and of other libraries publish nothing), and compares
// the holder's rank with the caller's, in the same script.
//
// Watch runs on one Pub/Sub connection per Server, shared by every waiter
// of the process: a key's channel is subscribed by its first waiter, at the
// cost of one round trip, and unsubscribed when its last waiter stops;
// later waiters of a subscribed key share the subscription at no cost. One
// reader goroutine serves the connection; waiters cost no goroutine. The
// connection is opened by the first Watch and dialed as FromURL's others
// are (password, TLS, client name); New's Server takes it from the caller's
// Pool instead, and holds it until it breaks or Close is called, so a Pool
// with MaxActive n leaves n-1 connections for the calls. When the
// connection breaks (a restart, a network failure) every waiter on it is
// woken to look at its key again, and the next Watch opens a new one. A
// connection that goes silent is found by a later Watch: one that finds a
// request unanswered 5 s past its deadline closes the connection, and one
// that finds it silent for 5 s sends a PING for the next to check. One
// caller at a time writes the subscriptions queued by all, so a server that
// stops reading holds up that caller only, up to the connection's write
// timeout. Close closes the connection and waits for its reader; later
// Watch calls fail with ErrClosed, in either mode. (A connection from the
// caller's Pool cannot be closed under a write in progress: Close then
// waits for that write, up to the Pool's write timeout.)
//
// In a Redis Cluster, PUBLISH reaches the subscribers of every node, at the
// price of one message on the cluster bus per node and release. A user
// whose ACL denies the channels still releases (its waiters wake by TTL),
// and its Watch fails with an error marked keyserver.ErrPermanent.
package redis

import (
	"cmp"
	"context"
	"fmt"
	"sync"
	"time"

	redigo "github.com/gomodule/redigo/redis"

	"github.com/goredlock/goredlock/keyserver"
)

// Pool hands out connections; *redigo.Pool is one.
type Pool interface {
	GetContext(ctx context.Context) (redigo.Conn, error)
}

// Server is a KeyServer over one Redis master. It is safe for concurrent
// use.
type Server struct {
	name string
	pool Pool        // pooled mode: one connection per call
	pipe *pipeline   // pipelined mode (FromURL): every call on one connection
	own  bool        // FromURL made the pool or the pipeline: Close closes it
	sub  *subscriber // Watch's Pub/Sub connection, opened by the first Watch

	mu       sync.RWMutex
	closed   bool
	inflight sync.WaitGroup
}

var (
	_ keyserver.Fencer   = (*Server)(nil)
	_ keyserver.Notifier = (*Server)(nil)
)

// Option configures a Server.
type Option func(*config)

type config struct {
	name       string
	dialOpts   []redigo.DialOption
	maxActive  int
	pooled     bool
	maxPending int
	// From FromURL's URL: the bound on dialing, and on a pipelined call
	// whose context has no deadline (the URL's read timeout).
	dialTimeout, callTimeout time.Duration
}

// WithName sets how errors name this server, e.g. its address; FromURL
// uses the URL's host and port by default.
func WithName(name string) Option { return func(c *config) { c.name = name } }

// WithDialOptions adds redigo dial options to the connections FromURL
// makes, e.g. redigo.DialTLSConfig for a private certificate authority.
func WithDialOptions(opts ...redigo.DialOption) Option {
	return func(c *config) { c.dialOpts = append(c.dialOpts, opts...) }
}

// WithPooledConnections makes FromURL run each call on a connection of its
// own from a redigo pool, as it did before pipelining, instead of sharing
// one pipelined connection: for a proxy in front of Redis that does not
// allow pipelining, or to compare the two.
func WithPooledConnections() Option { return func(c *config) { c.pooled = true } }

// WithMaxConnections caps the connections a WithPooledConnections pool
// opens at once; calls beyond it wait for a free connection within their
// deadline. Default 64. A pipelined Server opens one.
func WithMaxConnections(n int) Option { return func(c *config) { c.maxActive = n } }

// WithMaxPending caps the calls a pipelined Server holds at once: queued,
// sent and not yet answered, including those whose callers gave up. Past
// it, calls fail at once with ErrOverloaded. Default 4096.
func WithMaxPending(n int) Option { return func(c *config) { c.maxPending = n } }

// New returns a Server over pool. The caller keeps ownership of pool. The
// first Watch takes one more connection from pool for the Server's
// subscriber and keeps it until it breaks or Close is called (see the
// package doc).
func New(pool Pool, opts ...Option) *Server {
	c := config{name: "redis"}
	for _, o := range opts {
		o(&c)
	}
	return &Server{pool: pool, name: c.name, sub: newSubscriber(pool.GetContext, true, connectTimeout)}
}

// newOwned returns the Server FromURL makes, over connections that dial
// makes: pipelined, or pooled with WithPooledConnections.
func newOwned(c config, dial func(context.Context) (redigo.Conn, error)) (*Server, error) {
	sub := newSubscriber(dial, false, cmp.Or(c.dialTimeout, connectTimeout))
	if c.pooled {
		return &Server{pool: newPool(dial, c.maxActive), name: c.name, own: true, sub: sub}, nil
	}
	if c.maxPending == 0 {
		c.maxPending = defaultMaxPending
	}
	if c.maxPending < 1 {
		return nil, fmt.Errorf("%w: max pending calls %d is below 1", keyserver.ErrInvalidArgument, c.maxPending)
	}
	return &Server{pipe: newPipeline(dial, c), name: c.name, own: true, sub: sub}, nil
}

// Close waits for the calls in flight, which the redlock client may have
// left running in the background, and then closes the connections if
// FromURL made them: a call queued behind them fails with ErrClosed, and
// so does every later call. A pool given to New stays open and usable. In
// either mode Close also closes the subscriber connection, waking every
// Watch, and waits for its reader; later Watch calls fail with ErrClosed.
// It is safe to call more than once.
func (s *Server) Close() error {
	s.mu.Lock()
	already := s.closed
	if s.own {
		s.closed = true
	}
	s.mu.Unlock()
	s.sub.close()
	s.inflight.Wait()
	if !s.own || already {
		return nil
	}
	if s.pipe != nil {
		s.pipe.stop()
		return nil
	}
	return s.pool.(*redigo.Pool).Close()
}

// String returns the server's name.
func (s *Server) String() string { return s.name }

// Acquire stores key=token for ttl if key is absent, or renews it if it
// already holds token.
func (s *Server) Acquire(ctx context.Context, key, token string, ttl time.Duration) (bool, error) {
	if err := keyserver.CheckArgs(key, token, ttl, true); err != nil {
		return false, err
	}
	// Most calls find the key absent, and a plain SET NX costs Redis a
	// fraction of a script. Only a key that exists needs the script: it may
	// hold our token (a retried call), whose TTL the script resets.
	set, err := s.setNX(ctx, key, token, ttl)
	if err != nil || set {
		return set, err
	}
	n, err := s.run(ctx, "acquire", setScript, key, [maxArgs]any{key, token, ttl.Milliseconds()}, 3)
	return n == 1, err
}

// Extend renews key if it holds token, and stores it again if it is
// absent.
func (s *Server) Extend(ctx context.Context, key, token string, ttl time.Duration) (bool, error) {
	if err := keyserver.CheckArgs(key, token, ttl, true); err != nil {
		return false, err
	}
	n, err := s.run(ctx, "extend", setScript, key, [maxArgs]any{key, token, ttl.Milliseconds()}, 3)
	return n == 1, err
}

// Release deletes key if it holds token.
func (s *Server) Release(ctx context.Context, key, token string) (bool, error) {
	if err := keyserver.CheckArgs(key, token, 0, false); err != nil {
		return false, err
	}
	n, err := s.run(ctx, "release", delScript, key, [maxArgs]any{key, token}, 2)
	return n == 1, err
}

// AcquireFenced is Acquire, and reads key's fence counter, kept under
// keyserver.FenceKey(key) with no TTL, in the same script.
func (s *Server) AcquireFenced(ctx context.Context, key, token string, ttl time.Duration) (bool, uint64, error) {
	if err := keyserver.CheckArgs(key, token, ttl, true); err != nil {
		return false, 0, err
	}
	n, err := s.run(ctx, "acquire", fencedScript, key, [maxArgs]any{key, keyserver.FenceKey(key), token, ttl.Milliseconds()}, 4)
	if err != nil || n < 0 {
		return false, 0, err
	}
	return n&1 == 1, uint64(n >> 1), nil
}

// RaiseFence sets key's fence counter to fence if it holds less, and
// returns the counter as it was.
func (s *Server) RaiseFence(ctx context.Context, key string, fence uint64) (uint64, error) {
	if err := keyserver.CheckArgs(key, "-", 0, false); err != nil {
		return 0, err
	}
	if fence > keyserver.MaxFence {
		return 0, fmt.Errorf("%w: fence %d of key %q is above %d", keyserver.ErrInvalidArgument, fence, key, uint64(keyserver.MaxFence))
	}
	n, err := s.run(ctx, "raise fence", raiseScript, key, [maxArgs]any{keyserver.FenceKey(key), int64(fence)}, 2)
	if err != nil || n < 0 {
		return 0, err
	}
	return uint64(n), nil
}

// run runs sc with the first n of args in the Server's mode and returns
// its integer reply; key names the call in errors.
func (s *Server) run(ctx context.Context, op string, sc *script, key string, args [maxArgs]any, n int) (int64, error) {
	if err := s.enter(ctx, op, key); err != nil {
		return 0, err
	}
	defer s.inflight.Done()
	var (
		reply int64
		err   error
	)
	if s.pipe != nil {
		reply, err = s.pipe.do(ctx, sc, args, n)
	} else {
		reply, err = s.runPooled(ctx, sc, args[:n])
	}
	if err != nil {
		return 0, describe(s.name, op, key, err)
	}
	return reply, nil
}

// setNX runs SET key token NX PX ttl in the Server's mode, and reports
// whether it stored token.
func (s *Server) setNX(ctx context.Context, key, token string, ttl time.Duration) (bool, error) {
	if err := s.enter(ctx, "acquire", key); err != nil {
		return false, err
	}
	defer s.inflight.Done()
	var (
		set bool
		err error
	)
	if s.pipe != nil {
		set, err = s.pipe.setNX(ctx, key, token, ttl.Milliseconds())
	} else {
		set, err = s.setNXPooled(ctx, key, token, ttl.Milliseconds())
	}
	if err != nil {
		return false, describe(s.name, "acquire", key, err)
	}
	return set, nil
}

// enter counts a call in flight, for Close to wait for, unless the Server
// is closed or the call has already ended (it then reaches no server).
// The caller calls s.inflight.Done when it returns nil.
func (s *Server) enter(ctx context.Context, op, key string) error {
	s.mu.RLock()
	if s.closed {
		s.mu.RUnlock()
		return fmt.Errorf("%s: %s %q: %w", s.name, op, key, ErrClosed)
	}
	s.inflight.Add(1)
	s.mu.RUnlock()
	if err := ctx.Err(); err != nil {
		s.inflight.Done()
		return describe(s.name, op, key, err)
	}
	return nil
}
