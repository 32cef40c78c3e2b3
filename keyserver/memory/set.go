package memory

import (
	"context"
	"time"

	"github.com/goredlock/goredlock/internal/check"
	"github.com/goredlock/goredlock/keyserver"
)

// AcquireAll stores token under every key for ttl if no key is held by
// another token, or none of them (see keyserver.SetLocker).
func (s *Server) AcquireAll(ctx context.Context, keys []string, token string, ttl time.Duration) (bool, keyserver.Holder, error) {
	var h keyserver.Holder
	ok, err := s.locked(ctx, check.KeysTTL(keys, token, ttl), func() (bool, error) {
		var held bool
		if h, held = s.heldLocked(keys, token); held {
			return false, nil
		}
		for _, k := range keys {
			s.setLocked(k, token, ttl)
		}
		return true, nil
	})
	return ok, h, err
}

// ExtendAll renews every key of the set, or none of them.
func (s *Server) ExtendAll(ctx context.Context, keys []string, token string, ttl time.Duration) (bool, error) {
	ok, _, err := s.AcquireAll(ctx, keys, token, ttl)
	return ok, err
}

// ReleaseAll lets go of every key that holds token, and reports whether
// every one did.
func (s *Server) ReleaseAll(ctx context.Context, keys []string, token string) (bool, error) {
	return s.locked(ctx, check.Keys(keys, token), func() (bool, error) {
		all := true
		for _, k := range keys {
			all = s.releaseLocked(k, token) && all
		}
		return all, nil
	})
}

// heldLocked describes the first of keys that another token holds, if
// one does. s.mu must be held.
func (s *Server) heldLocked(keys []string, token string) (keyserver.Holder, bool) {
	now := s.now()
	for _, k := range keys {
		if e, ok := s.keys[k]; ok && !owns(e.token, token) && now.Before(e.expires) {
			return keyserver.Holder{Left: e.expires.Sub(now), Rank: keyserver.Compare(e.token, token)}, true
		}
	}
	return keyserver.Holder{}, false
}
