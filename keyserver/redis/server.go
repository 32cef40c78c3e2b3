package redis

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/goredlock/goredlock/keyserver"
	"github.com/goredlock/goredlock/keyserver/redis/internal/redigotransport"
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

	inc       incarnation // what it last read of its Redis's life
	scripting scriptCheck // whether it runs the scripts (scripting.go)
	// counter counts the connections that carry its commands: the
	// transport's, if it is a ConnectionCounter.
	counter ConnectionCounter
	// starter is the transport, if it starts commands (commandStarter).
	starter commandStarter
	// wait is WithWait's or WithWaitAOF's: nil when a write is a vote as
	// soon as it is answered.
	wait *durability
}

var (
	_ keyserver.Fencer   = (*Server)(nil)
	_ keyserver.Notifier = (*Server)(nil)
)

// ErrClosed is returned by every call on a closed Server. It matches
// keyserver.ErrPermanent, so a redlock call fails at once: calling a closed
// server is a mistake of the program that retrying cannot fix.
var ErrClosed = redigotransport.ErrClosed

// NewServer returns a Server over t, which it owns: Close closes it. Of
// the options only WithName applies, and WithWait and WithWaitAOF, which
// only FromURL's pipelined transport serves: over another, every write
// fails with an ErrInvalidArgument that says so, rather than count a vote
// that no WAIT confirmed. By default the server is named after t when t
// is a fmt.Stringer with a name (what it connects to: never a password),
// and "redis" otherwise.
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
	s := &Server{t: t, name: c.name, digests: make([]atomic.Pointer[string], len(scripts)), wait: c.wait}
	if s.wait != nil {
		s.wait.over(t)
	}
	s.counter, _ = t.(ConnectionCounter)
	s.starter, _ = t.(commandStarter)
	if s.wait != nil {
		s.starter = nil // started only with their WAIT, or not at all
		if s.wait.refused == nil {
			s.starter = startConfirming{s: s, t: s.wait.via}
		}
	}
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
	if s.t == nil {
		return nil // a zero Server holds nothing
	}
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

// errZeroServer is what every call of a Server that was not made by New,
// FromURL or NewServer returns, instead of panicking.
var errZeroServer = fmt.Errorf("redis: %w: a Server must be made by New, FromURL or NewServer", keyserver.ErrInvalidArgument)

// enter counts a call in flight, for Close to wait for, unless the Server
// is closed or the call's context has already ended (it then reaches no
// server). The caller calls s.inflight.Done when enter returns nil.
func (s *Server) enter(ctx context.Context, op, key string) error {
	if s.t == nil {
		return errZeroServer
	}
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

// eval runs sc on the transport with keys and args, and returns its
// integer reply.
func (s *Server) eval(ctx context.Context, op string, sc *script, keys []string, args ...string) (int64, error) {
	reply, err := s.evalAny(ctx, op, sc, keys, args...)
	if err != nil {
		return 0, err
	}
	return s.integer(op, keys[0], reply)
}

// integer reads a lock script's integer reply.
func (s *Server) integer(op, key string, reply any) (int64, error) {
	n, ok := reply.(int64)
	if !ok {
		return 0, s.fail(op, key, fmt.Errorf("unexpected reply %T to a lock script", reply))
	}
	return n, nil
}

// evalAny runs sc by its digest, or by its source until the digest is known,
// after NOSCRIPT, or always where SCRIPT LOAD is refused (see "Scripts" in
// docs/design.md): a call queued on a paused server then runs as sent.
// A script that grants waits for the replicas where WithWait asks.
func (s *Server) evalAny(ctx context.Context, op string, sc *script, keys []string, args ...string) (any, error) {
	if err := s.enter(ctx, op, keys[0]); err != nil {
		return nil, err
	}
	defer s.inflight.Done()
	if err := s.checkScripting(ctx, op, keys[0], sc); err != nil {
		return nil, err
	}
	if s.wait == nil || !sc.grants {
		return s.evalEntered(ctx, op, sc, keys, args...)
	}
	if err := s.canWait(op, keys[0]); err != nil {
		return nil, err
	}
	reply, conf, err := s.evalSending(ctx, op, sc, true, keys, args...)
	if err == nil {
		err = s.confirmed(ctx, op, keys[0], reply, conf)
	}
	return reply, err
}

// evalEntered is evalAny once the call has entered.
func (s *Server) evalEntered(ctx context.Context, op string, sc *script, keys []string, args ...string) (any, error) {
	reply, _, err := s.evalSending(ctx, op, sc, false, keys, args...)
	return reply, err
}

// evalSending is evalEntered, its write followed by the replicas' WAIT
// when confirm: it returns the WAIT's Confirmation with the reply.
func (s *Server) evalSending(ctx context.Context, op string, sc *script, confirm bool, keys []string, args ...string) (any, *redigotransport.Confirmation, error) {
	d := s.digests[sc.id].Load()
	if d != nil && *d != "" {
		reply, conf, err := s.send(ctx, confirm, []string{"EVALSHA", *d, strconv.Itoa(len(keys))}, keys, args...)
		if !s.noScript(err) && !s.byDigestRefused(sc, err) {
			if err != nil {
				return nil, nil, s.fail(op, keys[0], err)
			}
			return reply, conf, nil
		}
	}
	return s.evalSourceSending(ctx, op, sc, d == nil, confirm, keys, args...)
}

// evalSource runs sc by its source (EVAL), and then asks for its digest
// when load. The caller has entered. A script that grants waits for the
// replicas where WithWait asks, as in evalAny.
func (s *Server) evalSource(ctx context.Context, op string, sc *script, load bool, keys []string, args ...string) (any, error) {
	confirm := s.wait != nil && sc.grants
	if confirm {
		if err := s.canWait(op, keys[0]); err != nil {
			return nil, err
		}
	}
	reply, conf, err := s.evalSourceSending(ctx, op, sc, load, confirm, keys, args...)
	if err == nil && confirm {
		err = s.confirmed(ctx, op, keys[0], reply, conf)
	}
	return reply, err
}

// evalSourceSending is evalSource, its write followed by the replicas'
// WAIT when confirm, as evalSending.
func (s *Server) evalSourceSending(ctx context.Context, op string, sc *script, load, confirm bool, keys []string, args ...string) (any, *redigotransport.Confirmation, error) {
	reply, conf, err := s.send(ctx, confirm, []string{"EVAL", sc.src, strconv.Itoa(len(keys))}, keys, args...)
	if err != nil {
		return nil, nil, s.fail(op, keys[0], err)
	}
	if load {
		s.load(ctx, sc)
	}
	return reply, conf, nil
}

// load asks the server for sc's digest (SCRIPT LOAD), once it has run sc.
func (s *Server) load(ctx context.Context, sc *script) {
	reply, err := s.t.Do(ctx, []string{"SCRIPT", "LOAD", sc.src}, nil)
	if digest, ok := reply.(string); err == nil && ok {
		s.digests[sc.id].Store(&digest)
	} else if err != nil && s.permanent(err) {
		s.digests[sc.id].Store(new(string)) // "": by source from now on
	}
}

// noScript reports whether err is Redis's answer to an EVALSHA of a
// script it does not know.
func (s *Server) noScript(err error) bool {
	if err == nil {
		return false // and no reply text read, which costs redigo's transport an allocation
	}
	msg, ok := s.t.ReplyText(err)
	return ok && strings.HasPrefix(msg, "NOSCRIPT")
}

// setNX runs SET key token NX PX ttl, the fast path of a lock on a free
// key, and reports whether it stored token.
func (s *Server) setNX(ctx context.Context, key, token string, ttl time.Duration) (bool, error) {
	if err := s.enter(ctx, "acquire", key); err != nil {
		return false, err
	}
	defer s.inflight.Done()
	if s.wait == nil && !s.scriptingChecked() {
		if set, handled, err := s.firstSetNX(ctx, key, token, ttl); handled {
			return set, err // checked and set in one script (scripting.go)
		}
	}
	if err := s.checkScripting(ctx, "acquire", key, nil); err != nil {
		return false, err // no key written that a release could not undo
	}
	// The words share one array: one allocation where three slices
	// escaping to the transport cost three.
	w := []string{"SET", key, token, "NX", "PX", ms(ttl)}
	if s.wait != nil {
		if err := s.canWait("acquire", key); err != nil {
			return false, err
		}
	}
	reply, conf, err := s.send(ctx, s.wait != nil, w[:1:1], w[1:2:2], w[2:]...)
	if err == nil && s.wait != nil {
		if err := s.confirmed(ctx, "acquire", key, reply, conf); err != nil {
			return false, err
		}
	}
	switch {
	case err != nil:
		return false, s.fail("acquire", key, err)
	case reply == nil:
		return false, nil
	case reply != "OK":
		return false, s.fail("acquire", key, fmt.Errorf("unexpected reply %T to SET NX", reply))
	}
	return true, nil
}

// get runs GET key: its value, and whether it exists.
func (s *Server) get(ctx context.Context, op, key string) (string, bool, error) {
	reply, err := s.t.Do(ctx, []string{"GET"}, []string{key})
	if err != nil {
		return "", false, s.fail(op, key, err)
	}
	v, ok := reply.(string)
	if reply != nil && !ok {
		return "", false, s.fail(op, key, fmt.Errorf("unexpected reply %T to GET", reply))
	}
	return v, ok, nil
}

// ms writes d in the whole milliseconds Redis takes.
func ms(d time.Duration) string { return strconv.FormatInt(d.Milliseconds(), 10) }
