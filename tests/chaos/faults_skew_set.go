package chaos

import (
	"context"
	"time"

	"github.com/goredlock/goredlock/keyserver"
)

// skewedSets adds keyserver.SetLocker to a skewed server with the
// primitives, with its TTLs scaled and the time left it reports scaled
// back, as for a lock: a node whose clock runs fast lets a set go early.
// Without it the sets' clients of the skew scenarios would find a server
// that is no SetLocker, and every AcquireAll would be refused.
type skewedSets struct {
	skewedPrims
	set keyserver.SetLocker
}

// skewedWithSets returns s with the SetLocker methods of ks, if ks has
// them.
func skewedWithSets(s skewedPrims, ks keyserver.KeyServer) (keyserver.KeyServer, bool) {
	set, ok := ks.(keyserver.SetLocker)
	if !ok {
		return nil, false
	}
	return skewedSets{skewedPrims: s, set: set}, true
}

func (s skewedSets) AcquireAll(ctx context.Context, keys []string, token string, ttl time.Duration) (bool, keyserver.Holder, error) {
	ok, h, err := s.set.AcquireAll(ctx, keys, token, s.skewedNotifier.ttl(ttl))
	h.Left = s.skewedNotifier.left(h.Left)
	return ok, h, err
}

func (s skewedSets) AcquireAllInLine(ctx context.Context, keys []string, token string, ttl time.Duration) (bool, keyserver.Holder, error) {
	ok, h, err := s.set.AcquireAllInLine(ctx, keys, token, s.skewedNotifier.ttl(ttl))
	h.Left = s.skewedNotifier.left(h.Left)
	return ok, h, err
}

func (s skewedSets) LeaveLines(ctx context.Context, keys []string, token string) error {
	return s.set.LeaveLines(ctx, keys, token)
}

func (s skewedSets) ExtendAll(ctx context.Context, keys []string, token string, ttl time.Duration) (bool, error) {
	return s.set.ExtendAll(ctx, keys, token, s.skewedNotifier.ttl(ttl))
}

func (s skewedSets) ReleaseAll(ctx context.Context, keys []string, token string) (bool, error) {
	return s.set.ReleaseAll(ctx, keys, token)
}

// The wrapper keeps every ability it promises.
var (
	_ keyserver.Notifier   = skewedSets{}
	_ keyserver.Fencer     = skewedSets{}
	_ keyserver.HoldKeeper = skewedSets{}
	_ keyserver.SetLocker  = skewedSets{}
)
