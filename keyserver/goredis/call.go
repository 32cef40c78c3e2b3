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
	n, err := s.run(ctx, "acquire", setScript, key, []string{key}, token, ttl.Milliseconds())
	return n == 1, err
}

// Extend renews key if it holds token, and stores it again if it is
// absent.
func (s *Server) Extend(ctx context.Context, key, token string, ttl time.Duration) (bool, error) {
	if err := keyserver.CheckArgs(key, token, ttl, true); err != nil {
		return false, err
	}
	n, err := s.run(ctx, "extend", setScript, key, []string{key}, token, ttl.Milliseconds())
	return n == 1, err
}

// Release deletes key if it holds token.
func (s *Server) Release(ctx context.Context, key, token string) (bool, error) {
	if err := keyserver.CheckArgs(key, token, 0, false); err != nil {
		return false, err
	}
	n, err := s.run(ctx, "release", delScript, key, []string{key}, token)
	return n == 1, err
}

// AcquireFenced is Acquire, and reads key's fence counter, kept under
// keyserver.FenceKey(key) with no TTL, in the same script. The two keys
// share a hash slot, so the script runs on a Redis Cluster too.
func (s *Server) AcquireFenced(ctx context.Context, key, token string, ttl time.Duration) (bool, uint64, error) {
	if err := keyserver.CheckArgs(key, token, ttl, true); err != nil {
		return false, 0, err
	}
	n, err := s.run(ctx, "acquire", fencedScript, key, []string{key, keyserver.FenceKey(key)}, token, ttl.Milliseconds())
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
	n, err := s.run(ctx, "raise fence", raiseScript, key, []string{keyserver.FenceKey(key)}, int64(fence))
	if err != nil || n < 0 {
		return 0, err
	}
	return uint64(n), nil
}

// reply is the outcome of one script run.
type reply struct {
	n   int64
	err error
}

// run runs script on keys and returns its integer reply when it answers or
// ctx ends, whichever comes first; errors name op and the lock key key. The
// command runs on its own goroutine, which inflight tracks until go-redis
// returns, so that a paused server costs the caller no more than its
// context allows (see the package doc).
func (s *Server) run(ctx context.Context, op string, script *redis.Script, key string, keys []string, args ...any) (int64, error) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return 0, s.errorf(op, key, ErrClosed)
	}
	if err := ctx.Err(); err != nil {
		s.mu.Unlock()
		return 0, s.errorf(op, key, err) // go-redis checks too, but a wrapping client might not
	}
	s.inflight.Add(1)
	s.mu.Unlock()

	if ctx.Done() == nil { // a context that never ends needs no watching
		defer s.inflight.Done()
		n, err := script.Run(ctx, s.client, keys, args...).Int64()
		return s.result(op, key, n, err)
	}
	replies := make(chan reply, 1)
	go func() {
		defer s.inflight.Done()
		n, err := script.Run(ctx, s.client, keys, args...).Int64()
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
			return 0, s.errorf(op, key, ctx.Err())
		}
	}
}

func (s *Server) result(op, key string, n int64, err error) (int64, error) {
	if err != nil {
		return 0, s.errorf(op, key, err)
	}
	return n, nil
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
