package static

import (
	"context"
	"strings"
	"time"

	"github.com/goredlock/goredlock/keyserver"
)

// AcquireAll answers from OpAcquire's script, one call for the whole set
// (its Key is the keys joined by commas), or else from the store.
func (s *Server) AcquireAll(ctx context.Context, keys []string, token string, ttl time.Duration) (bool, keyserver.Holder, error) {
	if err := keyserver.CheckKeys(keys, token, ttl); err != nil {
		return false, keyserver.Holder{}, err
	}
	var h keyserver.Holder
	r, ok, err := s.call(ctx, Call{Op: OpAcquire, Key: strings.Join(keys, ","), Token: token, TTL: ttl},
		func(ctx context.Context, _, token string, ttl time.Duration) (bool, error) {
			ok, held, err := s.store.AcquireAll(ctx, keys, token, ttl)
			h = held
			return ok, err
		})
	if !r.Store {
		h = keyserver.Holder{Left: r.Left, Rank: r.Rank}
	}
	s.failBetweenKeys(ctx, r, keys, token)
	return ok, h, err
}

// failBetweenKeys lets go of the keys after the first r.Keys of a set's
// call that the store answered before failing with r.Err (see
// Reply.Keys), so that the server keeps only part of the set.
func (s *Server) failBetweenKeys(ctx context.Context, r Reply, keys []string, token string) {
	if r.Store && r.Err != nil && r.Keys > 0 && r.Keys < len(keys) {
		_, _ = s.store.ReleaseAll(context.WithoutCancel(ctx), keys[r.Keys:], token)
	}
}

// ExtendAll answers from OpExtend's script, or else from the store.
func (s *Server) ExtendAll(ctx context.Context, keys []string, token string, ttl time.Duration) (bool, error) {
	if err := keyserver.CheckKeys(keys, token, ttl); err != nil {
		return false, err
	}
	r, ok, err := s.call(ctx, Call{Op: OpExtend, Key: strings.Join(keys, ","), Token: token, TTL: ttl},
		func(ctx context.Context, _, token string, ttl time.Duration) (bool, error) {
			return s.store.ExtendAll(ctx, keys, token, ttl)
		})
	s.failBetweenKeys(ctx, r, keys, token)
	return ok, err
}

// ReleaseAll answers from OpRelease's script, or else from the store.
func (s *Server) ReleaseAll(ctx context.Context, keys []string, token string) (bool, error) {
	if err := keyserver.CheckKeys(keys, token, 0); err != nil {
		return false, err
	}
	r, ok, err := s.call(ctx, Call{Op: OpRelease, Key: strings.Join(keys, ","), Token: token},
		func(ctx context.Context, _, token string, _ time.Duration) (bool, error) {
			return s.store.ReleaseAll(ctx, keys, token)
		})
	if ok && err == nil && !r.Store {
		for _, k := range keys {
			s.Wake(k)
		}
	}
	return ok, err
}
