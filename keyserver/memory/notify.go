package memory

import (
	"context"
	"time"

	"github.com/goredlock/goredlock/keyserver"
)

var _ keyserver.Notifier = (*Server)(nil)

// AcquireOrHolder is Acquire that, when another token holds key, also
// returns how long that key has left and how the holder ranks.
func (s *Server) AcquireOrHolder(ctx context.Context, key, token string, ttl time.Duration) (bool, keyserver.Holder, error) {
	var h keyserver.Holder
	ok, err := s.locked(ctx, key, token, ttl, true, func() (bool, error) {
		if s.setLocked(key, token, ttl) {
			return true, nil
		}
		k := s.keys[key]
		h = keyserver.Holder{Left: k.expires.Sub(s.now()), Rank: keyserver.Compare(k.token, token)}
		return false, nil
	})
	return ok, h, err
}

// Watch returns a channel that is closed when a Release deletes key, or
// when the Server is closed; an expiry closes nothing. The watch costs a
// channel and a place in key's list of waiters, which stop gives back.
func (s *Server) Watch(ctx context.Context, key string) (<-chan struct{}, func(), error) {
	released := make(chan struct{})
	_, err := s.locked(ctx, key, "-", 0, false, func() (bool, error) {
		s.watchers[key] = append(s.watchers[key], released)
		return true, nil
	})
	if err != nil {
		return nil, nil, err
	}
	stopped := false
	stop := func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if stopped {
			return
		}
		stopped = true
		ws := s.watchers[key]
		for i, w := range ws {
			if w == released {
				ws[i] = ws[len(ws)-1]
				ws[len(ws)-1] = nil
				ws = ws[:len(ws)-1]
				break
			}
		}
		if len(ws) == 0 {
			delete(s.watchers, key)
		} else {
			s.watchers[key] = ws
		}
	}
	return released, stop, nil
}

// notifyLocked wakes key's waiters: key was released. Their list is
// dropped, so a waiter's stop finds nothing left to do. s.mu must be held.
func (s *Server) notifyLocked(key string) {
	for _, w := range s.watchers[key] {
		close(w)
	}
	delete(s.watchers, key)
}
