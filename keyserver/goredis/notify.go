package goredis

import (
	"context"
	"time"

	"github.com/goredlock/goredlock/internal/redisscript"
	"github.com/goredlock/goredlock/keyserver"
)

var _ keyserver.Notifier = (*Server)(nil)

// AcquireOrHolder is Acquire that, when another token holds key, also
// describes the holder: its PTTL (0 for a key without one) and how it
// ranks, read by the same script.
func (s *Server) AcquireOrHolder(ctx context.Context, key, token string, ttl time.Duration) (bool, keyserver.Holder, error) {
	if err := keyserver.CheckArgs(key, token, ttl, true); err != nil {
		return false, keyserver.Holder{}, err
	}
	n, err := s.run(ctx, "acquire", holderScript, key, []string{key}, token, ttl.Milliseconds())
	if err != nil || n < 0 {
		return false, keyserver.Holder{}, err
	}
	ok, h := redisscript.Holder(n)
	return ok, h, nil
}

// Watch subscribes to key's release channel on the Server's one go-redis
// PubSub, opening it if none is open, and returns once Redis has confirmed
// the subscription, or at once when other waiters of key already share
// one. The channel is closed when a Release of key by any client running
// this module's scripts deletes it, when the PubSub's connection breaks
// (go-redis would resubscribe silently, and a release published meanwhile
// reached nobody), or when the Server is closed.
func (s *Server) Watch(ctx context.Context, key string) (<-chan struct{}, func(), error) {
	if err := keyserver.CheckArgs(key, "-", 0, false); err != nil {
		return nil, nil, err
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, nil, s.errorf("watch", key, ErrClosed)
	}
	if err := ctx.Err(); err != nil {
		s.mu.Unlock()
		return nil, nil, s.errorf("watch", key, err)
	}
	s.inflight.Add(1)
	s.mu.Unlock()
	defer s.inflight.Done()

	released, stop, err := s.sub.watch(ctx, key)
	if err != nil {
		return nil, nil, s.errorf("watch", key, err)
	}
	return released, stop, nil
}
