// Package memory is a [keyserver.KeyServer] over an in-process map with TTLs.
//
// It is the single-node mode for a program that runs as one process, or
// before Redis exists: the same redlock API, with locks that hold between
// goroutines of this process only.
//
//	srv := memory.New()
//	defer srv.Close()
//	client, err := redlock.New([]keyserver.KeyServer{srv})
//
// Expired keys are dropped when they are next touched, and a background
// sweep removes the ones nobody touches again, so abandoned locks do not pile
// up ([WithSweepInterval]). [Server.Close] stops the sweep.
//
// A [Server] is a [keyserver.Notifier]: waiters for a key line up in the order
// their calls began, a Release promises the key to the next of them and
// wakes only that one, and a refusal says how long the holder's key has
// left and how it ranks.
package memory

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"time"

	"github.com/goredlock/goredlock/internal/check"
	"github.com/goredlock/goredlock/internal/clock"
	"github.com/goredlock/goredlock/keyserver"
)

// ErrClosed is returned by calls on a Server after Close. It matches
// keyserver.ErrPermanent: calling a closed server is a mistake of the
// program that retrying cannot fix, so a redlock call fails at once.
var ErrClosed = check.Permanent(errors.New("memory: server closed"))

// DefaultSweepInterval is how often expired keys are swept by default.
const DefaultSweepInterval = time.Minute

// Server is an in-process KeyServer. The zero value is not usable; call New.
type Server struct {
	now  func() time.Time
	born time.Time // when New made it, on now (see Incarnation)
	id   string

	mu     sync.Mutex
	keys   map[string]entry
	fences map[string]uint64 // fence counters by lock key; they never expire
	// lines are the keys' lines of waiters, and turns the waiters'
	// watches of them by key, until stopped (notify.go).
	lines map[string]*line
	turns map[string]map[*turnWatch]struct{}
	// contention are the holders' watches of their keys' lines, by key
	// (contention.go).
	contention map[string]map[*contentionWatch]struct{}
	closed     bool
	// prims are the semaphores, read-write locks and elections
	// (primitives.go).
	prims prims

	stop chan struct{} // closed by Close; nil when there is no sweep
	done chan struct{} // closed when the sweep goroutine has returned
}

type entry struct {
	token   string
	expires time.Time
}

var (
	_ keyserver.Fencer    = (*Server)(nil)
	_ keyserver.InProcess = (*Server)(nil)
)

// InProcess tells the client that calls answer at once, without I/O.
func (s *Server) InProcess() {}

// Option configures a Server.
type Option func(*config)

type config struct {
	sweep time.Duration
	now   func() time.Time
}

// WithSweepInterval sets how often expired keys are removed in the
// background; zero or less turns the sweep off, leaving expired keys to be
// dropped when they are next touched.
func WithSweepInterval(d time.Duration) Option {
	return func(c *config) { c.sweep = d }
}

// WithNow replaces the time source that TTLs are measured on; tests pass a
// fake clock's Now to expire keys without waiting. nil means the monotonic
// clock (see clock.MonoNow).
func WithNow(now func() time.Time) Option {
	return func(c *config) {
		if now != nil {
			c.now = now
		}
	}
}

// New returns an empty Server. Unless WithSweepInterval turns it off, a
// goroutine sweeps expired keys every DefaultSweepInterval until Close.
func New(opts ...Option) *Server {
	c := config{sweep: DefaultSweepInterval, now: clock.MonoNow}
	for _, o := range opts {
		o(&c)
	}
	s := &Server{now: c.now, born: c.now(), id: "memory-" + strconv.FormatInt(incarnations.Add(1), 10),
		keys: make(map[string]entry), fences: make(map[string]uint64),
		lines: make(map[string]*line), turns: make(map[string]map[*turnWatch]struct{})}
	if c.sweep > 0 {
		s.stop = make(chan struct{})
		s.done = make(chan struct{})
		go s.sweep(c.sweep)
	}
	return s
}

// Close stops the sweep, wakes every WatchTurn, and makes every later call
// fail with ErrClosed. It is safe to call more than once.
func (s *Server) Close() error {
	s.mu.Lock()
	already := s.closed
	s.closed = true
	s.keys, s.lines = nil, nil
	s.closePrims()
	for _, ws := range s.turns {
		for w := range ws {
			w.fire()
		}
	}
	s.breakContentionLocked()
	s.mu.Unlock()
	if !already && s.stop != nil {
		close(s.stop)
		<-s.done
	}
	return nil
}

func (s *Server) sweep(every time.Duration) {
	defer close(s.done)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
			s.mu.Lock()
			now := s.now()
			for k, e := range s.keys {
				if !now.Before(e.expires) {
					delete(s.keys, k)
				}
			}
			for k, q := range s.lines {
				if !now.Before(q.expires) {
					delete(s.lines, k)
				}
			}
			s.mu.Unlock()
		}
	}
}

// Len returns how many keys are stored and not yet expired.
func (s *Server) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	n := 0
	for _, e := range s.keys {
		if now.Before(e.expires) {
			n++
		}
	}
	return n
}

// Acquire stores key=token for ttl if key is absent or expired, or renews
// it if it already holds token.
func (s *Server) Acquire(ctx context.Context, key, token string, ttl time.Duration) (bool, error) {
	return s.set(ctx, key, token, ttl)
}

// Extend renews key if it holds token, and stores it again if it is absent
// or expired.
func (s *Server) Extend(ctx context.Context, key, token string, ttl time.Duration) (bool, error) {
	return s.set(ctx, key, token, ttl)
}

// AcquireFenced is Acquire, and reads key's fence counter in the same step.
func (s *Server) AcquireFenced(ctx context.Context, key, token string, ttl time.Duration) (bool, uint64, error) {
	var fence uint64
	ok, err := s.locked(ctx, keyserver.CheckTTL(key, token, ttl), func() (bool, error) {
		fence = s.fences[key]
		return s.setLocked(key, token, ttl), nil
	})
	return ok, fence, err
}

// RaiseFence sets key's fence counter to fence if it holds less, and
// returns the counter as it was.
func (s *Server) RaiseFence(ctx context.Context, key string, fence uint64) (uint64, error) {
	var prev uint64
	_, err := s.locked(ctx, keyserver.CheckKey(key), func() (bool, error) {
		prev = s.fences[key]
		if prev < fence {
			s.fences[key] = fence
		}
		return true, nil
	})
	return prev, err
}

// set is both Acquire and Extend: on a map that never loses keys behind the
// client's back, "store if absent" and "re-create if absent" are one rule.
func (s *Server) set(ctx context.Context, key, token string, ttl time.Duration) (bool, error) {
	return s.locked(ctx, keyserver.CheckTTL(key, token, ttl), func() (bool, error) { return s.setLocked(key, token, ttl), nil })
}

// locked runs f under the server's mutex, unless the call's arguments
// failed their check (bad, from keyserver.CheckTTL and its kin), its
// context has ended, or the server is closed.
func (s *Server) locked(ctx context.Context, bad error, f func() (bool, error)) (bool, error) {
	if bad != nil {
		return false, bad
	}
	if err := ctx.Err(); err != nil {
		return false, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false, ErrClosed
	}
	return f()
}

// setLocked stores key=token for ttl unless another token holds it: a
// key promised to token's call is its own (see keyserver.Notifier). s.mu
// must be held.
func (s *Server) setLocked(key, token string, ttl time.Duration) bool {
	now := s.now()
	if e, ok := s.keys[key]; ok && !owns(e.token, token) && now.Before(e.expires) {
		return false
	}
	s.keys[key] = entry{token: token, expires: now.Add(ttl.Truncate(time.Millisecond))}
	return true
}

// Release deletes key if it holds token.
func (s *Server) Release(ctx context.Context, key, token string) (bool, error) {
	return s.locked(ctx, keyserver.CheckToken(key, token), func() (bool, error) { return s.releaseLocked(key, token), nil })
}

// releaseLocked lets go of key if it holds token itself: key passes to
// the next waiter in line, or is deleted. s.mu must be held.
func (s *Server) releaseLocked(key, token string) bool {
	e, ok := s.keys[key]
	if !ok {
		return false
	}
	if !s.now().Before(e.expires) {
		delete(s.keys, key)
		return false
	}
	if e.token != token {
		return false // a promise to token's call is not token's to delete
	}
	s.handOverLocked(key)
	return true
}

// owns reports whether a key that holds value is token's: it holds token,
// or is promised to token's call.
func owns(value, token string) bool {
	return value == token || value == keyserver.PromiseOf(token)
}
