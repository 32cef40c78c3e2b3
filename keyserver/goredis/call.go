package goredis

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/goredlock/goredlock/internal/redisscript"
	"github.com/goredlock/goredlock/keyserver"
)

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

// reply is the outcome of one script run.
type reply struct {
	n   int64
	err error
}

// run runs script on key and returns when it answers or ctx ends,
// whichever comes first. The command runs on its own goroutine, which
// inflight tracks until go-redis returns, so that a paused server costs the
// caller no more than its context allows (see the package doc).
func (s *Server) run(ctx context.Context, op string, script *redis.Script, key string, args ...any) (bool, error) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return false, s.errorf(op, key, ErrClosed)
	}
	if err := ctx.Err(); err != nil {
		s.mu.Unlock()
		return false, s.errorf(op, key, err) // go-redis checks too, but a wrapping client might not
	}
	s.inflight.Add(1)
	s.mu.Unlock()

	if ctx.Done() == nil { // a context that never ends needs no watching
		defer s.inflight.Done()
		n, err := script.Run(ctx, s.client, []string{key}, args...).Int64()
		return s.result(op, key, n, err)
	}
	replies := make(chan reply, 1)
	go func() {
		defer s.inflight.Done()
		n, err := script.Run(ctx, s.client, []string{key}, args...).Int64()
		replies <- reply{n, err}
	}()
	select {
	case r := <-replies:
		return s.result(op, key, r.n, r.err)
	case <-ctx.Done():
		select {
		case r := <-replies: // answered as the context ended: the answer counts
			return s.result(op, key, r.n, r.err)
		default:
			return false, s.errorf(op, key, ctx.Err())
		}
	}
}

func (s *Server) result(op, key string, n int64, err error) (bool, error) {
	if err != nil {
		return false, s.errorf(op, key, err)
	}
	return n == 1, nil
}

// errorf names the server, the operation and the key, so that one line of a
// log says which of N servers failed and on what.
// A Redis error reply that retrying cannot fix (WRONGTYPE, a rejected
// password) is marked with keyserver.Permanent.
func (s *Server) errorf(op, key string, err error) error {
	if permanentReply(err) {
		err = keyserver.Permanent(err)
	}
	return fmt.Errorf("%s: %s %q: %w", s.name, op, key, err)
}

// permanentReply reports whether err is a Redis error reply that the same
// call would get again.
func permanentReply(err error) bool {
	var reply redis.Error
	return errors.As(err, &reply) && redisscript.PermanentReply(reply.Error())
}
