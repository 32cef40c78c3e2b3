package redis

import (
	"context"
	"fmt"
	"time"

	"github.com/goredlock/goredlock/internal/redisscript"
	"github.com/goredlock/goredlock/keyserver"
)

// AcquireOrHolder is Acquire that, when another token holds key, also
// describes the holder: its PTTL (0 for a key without one) and how it
// ranks, read by the script that refuses.
func (s *Server) AcquireOrHolder(ctx context.Context, key, token string, ttl time.Duration) (bool, keyserver.Holder, error) {
	if err := keyserver.CheckArgs(key, token, ttl, true); err != nil {
		return false, keyserver.Holder{}, err
	}
	// As Acquire: a plain SET NX first, the script only for a key that
	// exists, which a refusal then describes.
	set, err := s.setNX(ctx, key, token, ttl)
	if err != nil || set {
		return set, keyserver.Holder{}, err
	}
	n, err := s.run(ctx, "acquire", holderScript, key, [maxArgs]any{key, token, ttl.Milliseconds()}, 3)
	if err != nil || n < 0 {
		return false, keyserver.Holder{}, err
	}
	ok, h := redisscript.Holder(n)
	return ok, h, nil
}

// Watch subscribes to key's release channel on the Server's subscriber
// connection, opening it if none is open, and returns once Redis has
// confirmed the subscription, or at once when other waiters of key already
// share a confirmed one. The channel is closed when a Release of key by
// any client running this module's scripts deletes it, when the subscriber
// connection breaks, or when the Server is closed.
func (s *Server) Watch(ctx context.Context, key string) (<-chan struct{}, func(), error) {
	if err := keyserver.CheckArgs(key, "-", 0, false); err != nil {
		return nil, nil, err
	}
	s.mu.RLock()
	if s.closed {
		s.mu.RUnlock()
		return nil, nil, fmt.Errorf("%s: watch %q: %w", s.name, key, ErrClosed)
	}
	s.inflight.Add(1)
	s.mu.RUnlock()
	defer s.inflight.Done()

	if err := ctx.Err(); err != nil {
		return nil, nil, describe(s.name, "watch", key, err)
	}
	released, stop, err := s.sub.watch(ctx, key)
	if err != nil {
		return nil, nil, describe(s.name, "watch", key, err)
	}
	return released, stop, nil
}
