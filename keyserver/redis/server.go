package redis

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/goredlock/goredlock/keyserver"
)

// Server is a KeyServer over one Redis master (or one Redis Cluster or
// Sentinel-watched master, through a client that follows them), reached
// through a Transport. It is safe for concurrent use.
type Server struct {
	t    Transport
	name string
	sub  *subscriber

	// digests holds, by script id, the digest SCRIPT LOAD returned.
	digests []atomic.Pointer[string]

	mu       sync.RWMutex
	closed   bool
	inflight sync.WaitGroup
}

var (
	_ keyserver.Fencer   = (*Server)(nil)
	_ keyserver.Notifier = (*Server)(nil)
)

// ErrClosed is returned by every call on a Server whose Close has been
// called.
var ErrClosed = errors.New("redis: server closed")

// NewServer returns a Server over t, which it owns: Close closes it. Of
// the options only WithName applies; the server is named after t when t is
// a fmt.Stringer, and "redis" otherwise.
func NewServer(t Transport, opts ...Option) *Server {
	c := config{}
	if n, ok := t.(fmt.Stringer); ok {
		c.name = n.String()
	}
	for _, o := range opts {
		o(&c)
	}
	if c.name == "" {
		c.name = "redis"
	}
	s := &Server{t: t, name: c.name, digests: make([]atomic.Pointer[string], len(scripts))}
	s.sub = newSubscriber(s)
	return s
}

// String returns the server's name.
func (s *Server) String() string { return s.name }

// Close waits for the calls in flight, which the redlock client may have
// left running in the background, closes the subscriber connection (every
// WatchTurn's channel is closed) and then the transport. Later calls fail
// with ErrClosed. It is safe to call more than once.
func (s *Server) Close() error {
	s.mu.Lock()
	already := s.closed
	s.closed = true
	s.mu.Unlock()
	if already {
		return nil
	}
	s.sub.close()
	s.inflight.Wait()
	return s.t.Close()
}

// enter counts a call in flight, for Close to wait for, unless the Server
// is closed or the call's context has already ended (it then reaches no
// server). The caller calls s.inflight.Done when enter returns nil.
func (s *Server) enter(ctx context.Context, op, key string) error {
	s.mu.RLock()
	if s.closed {
		s.mu.RUnlock()
		return s.fail(op, key, ErrClosed)
	}
	s.inflight.Add(1)
	s.mu.RUnlock()
	if err := ctx.Err(); err != nil {
		s.inflight.Done()
		return s.fail(op, key, err)
	}
	return nil
}

// eval runs sc on the transport, by the digest SCRIPT LOAD gave for it.
// Until a Server knows a script's digest it sends the source (EVAL, which
// also loads the script), and then asks for the digest: a call queued on a
// server that is paused thus runs as sent when it resumes. A server that
// refuses SCRIPT LOAD (an ACL, say) gets the source every time.
func (s *Server) eval(ctx context.Context, op string, sc *script, keys []string, args ...any) (int64, error) {
	if err := s.enter(ctx, op, keys[0]); err != nil {
		return 0, err
	}
	defer s.inflight.Done()
	d := s.digests[sc.id].Load()
	digest := ""
	if d != nil {
		digest = *d
	}
	n, err := s.t.Eval(ctx, digest, sc.src, keys, args)
	if err != nil {
		return 0, s.fail(op, keys[0], err)
	}
	if d == nil {
		if digest, err := s.t.LoadScript(ctx, sc.src); err == nil {
			s.digests[sc.id].Store(&digest)
		} else if s.permanent(err) {
			s.digests[sc.id].Store(new(string)) // "": by source from now on
		}
	}
	return n, nil
}

// setNX runs SET key token NX PX ttl, the fast path of a lock on a free
// key.
func (s *Server) setNX(ctx context.Context, key, token string, ttl time.Duration) (bool, error) {
	if err := s.enter(ctx, "acquire", key); err != nil {
		return false, err
	}
	defer s.inflight.Done()
	ok, err := s.t.SetNX(ctx, key, token, ttl)
	if err != nil {
		return false, s.fail("acquire", key, err)
	}
	return ok, nil
}
