package chaos

import (
	"context"
	"time"

	"github.com/goredlock/goredlock/keyserver"
)

// skewedPrims adds the primitives' methods (keyserver.HoldKeeper) to a
// skewed Notifier and Fencer, with their TTLs scaled and the times left
// they report scaled back, as for a lock: a node whose clock runs fast
// lets a permit, a hold or a leadership go early. Skewed returns one when
// the server it wraps has every one of these abilities, as the Redis key
// server does.
type skewedPrims struct {
	skewedBoth
	hk keyserver.HoldKeeper
}

// skewedWithPrims returns s with the primitives' methods of ks, if ks
// has them.
func skewedWithPrims(s skewedBoth, ks keyserver.KeyServer) (skewedPrims, bool) {
	hk, ok := ks.(keyserver.HoldKeeper)
	if !ok {
		return skewedPrims{}, false
	}
	return skewedPrims{skewedBoth: s, hk: hk}, true
}

func (s skewedPrims) AcquireHold(ctx context.Context, h keyserver.HoldSpec, ttl time.Duration) (bool, keyserver.HoldReply, error) {
	ok, r, err := s.hk.AcquireHold(ctx, h, s.skewedNotifier.ttl(ttl))
	r.Left = s.skewedNotifier.left(r.Left)
	return ok, r, err
}

func (s skewedPrims) ExtendHold(ctx context.Context, h keyserver.HoldSpec, ttl time.Duration) (bool, error) {
	return s.hk.ExtendHold(ctx, h, s.skewedNotifier.ttl(ttl))
}

func (s skewedPrims) ReleaseHold(ctx context.Context, h keyserver.HoldSpec) (bool, error) {
	return s.hk.ReleaseHold(ctx, h)
}

func (s skewedPrims) WatchHolds(ctx context.Context, h keyserver.HoldSpec) (<-chan struct{}, func(), error) {
	return s.hk.WatchHolds(ctx, h)
}

func (s skewedPrims) ReadLeader(ctx context.Context, key string) (keyserver.Leadership, error) {
	ld, err := s.hk.ReadLeader(ctx, key)
	ld.Left = s.skewedNotifier.left(ld.Left)
	return ld, err
}

// The wrapper keeps every ability it promises.
var (
	_ keyserver.Notifier   = skewedPrims{}
	_ keyserver.Fencer     = skewedPrims{}
	_ keyserver.HoldKeeper = skewedPrims{}
)
