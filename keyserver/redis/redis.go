// Package redis is a KeyServer over one Redis master, through a redigo pool.
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
// server's script cache is empty (after a restart or SCRIPT FLUSH). Every
// call honours the context's deadline, which the redlock client sets to its
// per-server timeout: a paused or unreachable server costs at most that
// long. A key holding another type of value is reported as an error and
// left untouched.
package redis

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
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
	pool    Pool
	name    string
	ownPool bool // made by FromURL: Close closes it

	mu       sync.Mutex
	closed   bool
	inflight sync.WaitGroup
}

var _ keyserver.KeyServer = (*Server)(nil)

// Option configures a Server.
type Option func(*config)

type config struct {
	name      string
	dialOpts  []redigo.DialOption
	maxActive int
}

// WithName sets how errors name this server, e.g. its address; FromURL
// uses the URL's host and port by default.
func WithName(name string) Option { return func(c *config) { c.name = name } }

// WithDialOptions adds redigo dial options to the connections FromURL
// makes, e.g. redigo.DialTLSConfig for a private certificate authority.
func WithDialOptions(opts ...redigo.DialOption) Option {
	return func(c *config) { c.dialOpts = append(c.dialOpts, opts...) }
}

// WithMaxConnections caps the connections a FromURL pool opens at once;
// calls beyond it wait for a free connection within their deadline.
// Default 64.
func WithMaxConnections(n int) Option { return func(c *config) { c.maxActive = n } }

// New returns a Server over pool. The caller keeps ownership of pool.
func New(pool Pool, opts ...Option) *Server {
	c := config{name: "redis"}
	for _, o := range opts {
		o(&c)
	}
	return &Server{pool: pool, name: c.name}
}

// ErrClosed is returned by calls on a Server whose Close has been called
// and whose pool it owned.
var ErrClosed = errors.New("redis: server closed")

// Close waits for the calls in flight, which the redlock client may have
// left running in the background, and then closes the pool if FromURL made
// it; a pool given to New stays open and usable. It is safe to call more
// than once.
func (s *Server) Close() error {
	s.mu.Lock()
	already := s.closed
	if s.ownPool {
		s.closed = true
	}
	s.mu.Unlock()
	s.inflight.Wait()
	if !s.ownPool || already {
		return nil
	}
	return s.pool.(*redigo.Pool).Close()
}

// String returns the server's name.
func (s *Server) String() string { return s.name }

// set stores KEYS[1]=ARGV[1] for ARGV[2] ms if the key is absent, or resets
// the TTL if it already holds ARGV[1]. It is both Acquire and Extend: for
// Redis "store if absent" and "re-create if absent (a restarted server)"
// are the same rule. GET fails on a key of another type, which aborts the
// script before it writes anything.
var setScript = redigo.NewScript(1, `
local v = redis.call('GET', KEYS[1])
if v == false then
	redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
	return 1
end
if v == ARGV[1] then
	redis.call('PEXPIRE', KEYS[1], ARGV[2])
	return 1
end
return 0
`)

// delScript deletes KEYS[1] if it holds ARGV[1].
var delScript = redigo.NewScript(1, `
if redis.call('GET', KEYS[1]) == ARGV[1] then
	return redis.call('DEL', KEYS[1])
end
return 0
`)

// Acquire stores key=token for ttl if key is absent, or renews it if it
// already holds token.
func (s *Server) Acquire(ctx context.Context, key, token string, ttl time.Duration) (bool, error) {
	if err := keyserver.CheckArgs(key, token, ttl, true); err != nil {
		return false, err
	}
	return s.run(ctx, "acquire", setScript, key, token, ttl.Milliseconds())
}

// Extend renews key if it holds token, and stores it again if it is
// absent.
func (s *Server) Extend(ctx context.Context, key, token string, ttl time.Duration) (bool, error) {
	if err := keyserver.CheckArgs(key, token, ttl, true); err != nil {
		return false, err
	}
	return s.run(ctx, "extend", setScript, key, token, ttl.Milliseconds())
}

// Release deletes key if it holds token.
func (s *Server) Release(ctx context.Context, key, token string) (bool, error) {
	if err := keyserver.CheckArgs(key, token, 0, false); err != nil {
		return false, err
	}
	return s.run(ctx, "release", delScript, key, token)
}

// run runs script on a pooled connection. A connection that turns out to
// be broken (the server restarted since it was pooled) is replaced once:
// the scripts are idempotent, so running one twice is harmless.
func (s *Server) run(ctx context.Context, op string, script *redigo.Script, key string, args ...any) (bool, error) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return false, fmt.Errorf("%s: %s %q: %w", s.name, op, key, ErrClosed)
	}
	s.inflight.Add(1)
	s.mu.Unlock()
	defer s.inflight.Done()

	keysAndArgs := append([]any{key}, args...)
	var err error
	for try := 0; try < 2; try++ {
		var n int
		n, err = s.runOnce(ctx, script, keysAndArgs)
		if err == nil {
			return n == 1, nil
		}
		if !retryable(ctx, err) {
			break
		}
	}
	return false, fmt.Errorf("%s: %s %q: %w", s.name, op, key, describeAuth(err))
}

func (s *Server) runOnce(ctx context.Context, script *redigo.Script, keysAndArgs []any) (int, error) {
	conn, err := s.pool.GetContext(ctx)
	if err != nil {
		return 0, fmt.Errorf("connecting: %w", err)
	}
	defer conn.Close()
	return redigo.Int(script.DoContext(ctx, conn, keysAndArgs...))
}

// retryable reports whether err came from a connection that broke, rather
// than from Redis itself or from the deadline.
func retryable(ctx context.Context, err error) bool {
	if ctx.Err() != nil {
		return false
	}
	var redisErr redigo.Error
	if errors.As(err, &redisErr) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return false
	}
	var netErr net.Error
	if errors.As(err, &netErr) && netErr.Timeout() {
		return false
	}
	return true
}

// describeAuth makes authentication failures say so in plain words:
// Redis reports them as WRONGPASS (wrong password), NOAUTH (none given) or,
// before ACLs, "ERR AUTH ... called without any password configured".
func describeAuth(err error) error {
	msg := err.Error()
	for _, code := range []string{"WRONGPASS", "NOAUTH", "ERR AUTH", "invalid password"} {
		if strings.Contains(msg, code) {
			return fmt.Errorf("authentication failed (wrong or missing password?): %w", err)
		}
	}
	return err
}
