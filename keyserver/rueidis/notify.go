package rueidis

import (
	"context"
	"strconv"
	"time"

	"github.com/goredlock/goredlock/keyserver"
)

var _ keyserver.Notifier = (*Server)(nil)

// AcquireOrTTL is Acquire that, when another token holds key, also returns
// the holder's PTTL (0 for a key without one), read by the same script.
func (s *Server) AcquireOrTTL(ctx context.Context, key, token string, ttl time.Duration) (bool, time.Duration, error) {
	if err := keyserver.CheckArgs(key, token, ttl, true); err != nil {
		return false, 0, err
	}
	n, err := s.run(ctx, "acquire", ttlScript, key, []string{key}, token, strconv.FormatInt(ttl.Milliseconds(), 10))
	if err != nil || n < 0 {
		return false, 0, err
	}
	if n&1 == 1 {
		return true, 0, nil
	}
	return false, time.Duration(n>>1) * time.Millisecond, nil
}

// Watch subscribes to key's release channel on the Server's one dedicated
// rueidis connection, opening it if none is open, and returns once Redis
// has confirmed the subscription, or at once when other waiters of key
// already share one. The channel is closed when a Release of key by any
// client running this module's scripts deletes it, when the connection
// breaks, or when the Server is closed.
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
