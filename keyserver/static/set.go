package static

import (
	"context"
	"strings"
	"time"

	"github.com/goredlock/goredlock/internal/check"
	"github.com/goredlock/goredlock/keyserver"
)

// AcquireAll answers from OpAcquire's script, one call for the whole set
// (its Key is the keys joined by commas), or else from the store.
func (s *Server) AcquireAll(ctx context.Context, keys []string, token string, ttl time.Duration) (bool, keyserver.Holder, error) {
	return s.acquireAll(ctx, keys, token, ttl, s.store.AcquireAll)
}

// AcquireAllInLine answers as AcquireAll does; when it answers from the
// store, the store's lines are joined or left as a Notifier's are. A
// scripted reply leaves the lines alone.
func (s *Server) AcquireAllInLine(ctx context.Context, keys []string, token string, ttl time.Duration) (bool, keyserver.Holder, error) {
	return s.acquireAll(ctx, keys, token, ttl, s.store.AcquireAllInLine)
}

// LeaveLines is the store's.
func (s *Server) LeaveLines(ctx context.Context, keys []string, token string) error {
	return s.store.LeaveLines(ctx, keys, token)
}

// acquireAll is AcquireAll or AcquireAllInLine, answered by store unless
// scripted.
func (s *Server) acquireAll(ctx context.Context, keys []string, token string, ttl time.Duration,
	store func(context.Context, []string, string, time.Duration) (bool, keyserver.Holder, error)) (bool, keyserver.Holder, error) {
	if err := check.KeysTTL(keys, token, ttl); err != nil {
		return false, keyserver.Holder{}, err
	}
	var h keyserver.Holder
	r, ok, err := s.call(ctx, Call{Op: OpAcquire, Key: strings.Join(keys, ","), Token: token, TTL: ttl},
		func(ctx context.Context, _, token string, ttl time.Duration) (bool, error) {
			ok, held, err := store(ctx, keys, token, ttl)
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
	if err := check.KeysTTL(keys, token, ttl); err != nil {
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
	if err := check.Keys(keys, token); err != nil {
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
