package chaos

import (
	"context"
	"time"

	"github.com/goredlock/goredlock/keyserver"
)

// skewedPrims adds the primitives' methods (keyserver.Semaphorer,
// RWLocker and Elector) to a skewed Notifier and Fencer, with their TTLs
// scaled and the times left they report scaled back, as for a lock: a
// node whose clock runs fast lets a permit, a hold or a leadership go
// early. Skewed returns one when the server it wraps has every one of
// these abilities, as the Redis key server does.
type skewedPrims struct {
	skewedBoth
	sem keyserver.Semaphorer
	rw  keyserver.RWLocker
	el  keyserver.Elector
}

// skewedWithPrims returns s with the primitives' methods of ks, if ks
// has them all.
func skewedWithPrims(s skewedBoth, ks keyserver.KeyServer) (skewedPrims, bool) {
	sem, isSem := ks.(keyserver.Semaphorer)
	rw, isRW := ks.(keyserver.RWLocker)
	el, isEl := ks.(keyserver.Elector)
	if !isSem || !isRW || !isEl {
		return skewedPrims{}, false
	}
	return skewedPrims{skewedBoth: s, sem: sem, rw: rw, el: el}, true
}

func (s skewedPrims) AcquirePermit(ctx context.Context, key string, permits, slot int, token string, ttl time.Duration) (bool, keyserver.Permits, error) {
	ok, p, err := s.sem.AcquirePermit(ctx, key, permits, slot, token, s.skewedNotifier.ttl(ttl))
	p.Left = s.skewedNotifier.left(p.Left)
	return ok, p, err
}

func (s skewedPrims) ExtendPermit(ctx context.Context, key string, slot int, token string, ttl time.Duration) (bool, error) {
	return s.sem.ExtendPermit(ctx, key, slot, token, s.skewedNotifier.ttl(ttl))
}

func (s skewedPrims) ReleasePermit(ctx context.Context, key string, slot int, token string) (bool, error) {
	return s.sem.ReleasePermit(ctx, key, slot, token)
}

func (s skewedPrims) WatchPermits(ctx context.Context, key, token string) (<-chan struct{}, func(), error) {
	return s.sem.WatchPermits(ctx, key, token)
}

func (s skewedPrims) AcquireRead(ctx context.Context, key, token string, ttl time.Duration) (bool, keyserver.Holder, error) {
	ok, h, err := s.rw.AcquireRead(ctx, key, token, s.skewedNotifier.ttl(ttl))
	h.Left = s.skewedNotifier.left(h.Left)
	return ok, h, err
}

func (s skewedPrims) AcquireWrite(ctx context.Context, key, token string, ttl time.Duration, wait bool) (bool, keyserver.Holder, error) {
	ok, h, err := s.rw.AcquireWrite(ctx, key, token, s.skewedNotifier.ttl(ttl), wait)
	h.Left = s.skewedNotifier.left(h.Left)
	return ok, h, err
}

func (s skewedPrims) ExtendHold(ctx context.Context, key, token string, ttl time.Duration, write bool) (bool, error) {
	return s.rw.ExtendHold(ctx, key, token, s.skewedNotifier.ttl(ttl), write)
}

func (s skewedPrims) ReleaseHold(ctx context.Context, key, token string, write bool) (bool, error) {
	return s.rw.ReleaseHold(ctx, key, token, write)
}

func (s skewedPrims) WatchHolds(ctx context.Context, key, token string, write bool) (<-chan struct{}, func(), error) {
	return s.rw.WatchHolds(ctx, key, token, write)
}

func (s skewedPrims) AcquireLeader(ctx context.Context, key, token, value string, ttl time.Duration) (bool, uint64, error) {
	return s.el.AcquireLeader(ctx, key, token, value, s.skewedNotifier.ttl(ttl))
}

func (s skewedPrims) ExtendLeader(ctx context.Context, key, token, value string, ttl time.Duration) (bool, error) {
	return s.el.ExtendLeader(ctx, key, token, value, s.skewedNotifier.ttl(ttl))
}

func (s skewedPrims) ReleaseLeader(ctx context.Context, key, token string) (bool, error) {
	return s.el.ReleaseLeader(ctx, key, token)
}

func (s skewedPrims) ReadLeader(ctx context.Context, key string) (keyserver.Leadership, error) {
	ld, err := s.el.ReadLeader(ctx, key)
	ld.Left = s.skewedNotifier.left(ld.Left)
	return ld, err
}

func (s skewedPrims) WatchLeader(ctx context.Context, key string) (<-chan struct{}, func(), error) {
	return s.el.WatchLeader(ctx, key)
}

// The wrapper keeps every ability it promises.
var (
	_ keyserver.Notifier   = skewedPrims{}
	_ keyserver.Fencer     = skewedPrims{}
	_ keyserver.Semaphorer = skewedPrims{}
	_ keyserver.RWLocker   = skewedPrims{}
	_ keyserver.Elector    = skewedPrims{}
)
