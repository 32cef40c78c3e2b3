package chaos

import (
	"context"
	"math"
	"sync/atomic"
	"time"

	"github.com/goredlock/goredlock/internal/layout"
	"github.com/goredlock/goredlock/keyserver"
)

// Clocks holds the rate at which each node's clock runs, as the suite
// pretends it: 1 is true time, 1.1 a clock that runs 10% fast. A node whose
// clock runs fast expires a key early, in true time, which is what breaks
// Redlock; the suite injects that by scaling the TTLs the clients send to
// the node (see Skewed) instead of changing the node's clock: libfaketime
// makes redis-server hang, and for the lock the two are the same fault.
// It is safe for concurrent use.
type Clocks struct {
	rates []atomic.Uint64 // math.Float64bits of each node's rate
}

// NewClocks returns n clocks that keep true time.
func NewClocks(n int) *Clocks {
	c := &Clocks{rates: make([]atomic.Uint64, n)}
	for i := range c.rates {
		c.Set(i, 1)
	}
	return c
}

// Set makes node i's clock run at rate from now on; the keys it already
// holds keep the TTL they were given.
func (c *Clocks) Set(i int, rate float64) {
	if rate <= 0 || math.IsNaN(rate) || math.IsInf(rate, 0) {
		panic("chaos: a clock's rate must be positive and finite")
	}
	c.rates[i].Store(math.Float64bits(rate))
}

// Rate returns node i's rate.
func (c *Clocks) Rate(i int) float64 { return math.Float64frombits(c.rates[i].Load()) }

// toNode converts a TTL the client means, in true time, to the TTL that
// lives as long, in true time, as ttl does on node i's clock: ttl / rate,
// to the nearest millisecond as Redis keeps it, and never under one.
func (c *Clocks) toNode(i int, ttl time.Duration) time.Duration {
	r := c.Rate(i)
	if r == 1 {
		return ttl
	}
	d := time.Duration(float64(ttl) / r).Round(time.Millisecond)
	return max(d, layout.MinTTL)
}

// fromNode converts a time left that node i measured on true time to what
// the node would report on its own clock: a fast clock counts more.
func (c *Clocks) fromNode(i int, left time.Duration) time.Duration {
	r := c.Rate(i)
	if r == 1 || left <= 0 {
		return left
	}
	return time.Duration(float64(left) * r)
}

// Skewed wraps the KeyServer of node i so that it keeps time on node i's
// clock in c: every TTL sent to it is scaled, and every time left it
// reports is scaled back. The result implements keyserver.Notifier and
// keyserver.Fencer exactly when ks does, the primitives' HoldKeeper when
// ks implements it and both of those, and with it SetLocker when ks
// implements it too, so that the redlock
// client sees the same abilities with and without the skew. It never
// implements keyserver.InProcess: it forwards to a server that may block.
func Skewed(ks keyserver.KeyServer, c *Clocks, i int) keyserver.KeyServer {
	s := skewed{ks: ks, c: c, i: i}
	n, notifier := ks.(keyserver.Notifier)
	f, fencer := ks.(keyserver.Fencer)
	switch {
	case notifier && fencer:
		both := skewedBoth{skewedNotifier{s, n}, skewedFencer{s, f}}
		if prims, ok := skewedWithPrims(both, ks); ok {
			if sets, ok := skewedWithSets(prims, ks); ok {
				return sets
			}
			return prims
		}
		return both
	case notifier:
		return skewedNotifier{s, n}
	case fencer:
		return skewedFencer{s, f}
	}
	return s
}

// skewed forwards the KeyServer methods with their TTLs scaled.
type skewed struct {
	ks keyserver.KeyServer
	c  *Clocks
	i  int
}

func (s skewed) Acquire(ctx context.Context, key, token string, ttl time.Duration) (bool, error) {
	return s.ks.Acquire(ctx, key, token, s.ttl(ttl))
}

func (s skewed) Extend(ctx context.Context, key, token string, ttl time.Duration) (bool, error) {
	return s.ks.Extend(ctx, key, token, s.ttl(ttl))
}

func (s skewed) Release(ctx context.Context, key, token string) (bool, error) {
	return s.ks.Release(ctx, key, token)
}

// ttl scales a valid TTL; an invalid one is passed on as it is, for the
// server to reject.
func (s skewed) ttl(ttl time.Duration) time.Duration {
	if ttl < layout.MinTTL {
		return ttl
	}
	return s.c.toNode(s.i, ttl)
}

// left scales back a time left that the node reported.
func (s skewed) left(d time.Duration) time.Duration { return s.c.fromNode(s.i, d) }

// String names the wrapped server, as errors show it.
func (s skewed) String() string {
	if st, ok := s.ks.(interface{ String() string }); ok {
		return st.String() + " (skewed)"
	}
	return "skewed server"
}

// skewedNotifier adds the Notifier methods.
type skewedNotifier struct {
	skewed
	n keyserver.Notifier
}

func (s skewedNotifier) AcquireOrHolder(ctx context.Context, key, token string, ttl time.Duration) (bool, keyserver.Holder, error) {
	ok, h, err := s.n.AcquireOrHolder(ctx, key, token, s.ttl(ttl))
	h.Left = s.left(h.Left)
	return ok, h, err
}

func (s skewedNotifier) AcquireInLine(ctx context.Context, key, token string, ttl time.Duration, next string) (bool, keyserver.Holder, error) {
	ok, h, err := s.n.AcquireInLine(ctx, key, token, s.ttl(ttl), next)
	h.Left = s.left(h.Left)
	return ok, h, err
}

func (s skewedNotifier) WatchTurn(ctx context.Context, key, token string) (<-chan struct{}, func(), error) {
	return s.n.WatchTurn(ctx, key, token)
}

func (s skewedNotifier) LeaveLine(ctx context.Context, key, token string) error {
	return s.n.LeaveLine(ctx, key, token)
}

func (s skewedNotifier) ReleaseInLine(ctx context.Context, key, token string) (bool, error) {
	return s.n.ReleaseInLine(ctx, key, token)
}

func (s skewedNotifier) WatchContention(ctx context.Context, key, token string) (contended, broken <-chan struct{}, stop func(), err error) {
	return s.n.WatchContention(ctx, key, token)
}

// skewedFencer adds the Fencer methods; fence counters have no TTL.
type skewedFencer struct {
	skewed
	f keyserver.Fencer
}

func (s skewedFencer) AcquireFenced(ctx context.Context, key, token string, ttl time.Duration) (bool, uint64, error) {
	return s.f.AcquireFenced(ctx, key, token, s.ttl(ttl))
}

func (s skewedFencer) RaiseFence(ctx context.Context, key string, fence uint64) (uint64, error) {
	return s.f.RaiseFence(ctx, key, fence)
}

// skewedBoth is a Notifier and a Fencer. Its KeyServer methods are the
// notifier's (the fencer's, the same, are hidden by the ambiguity).
type skewedBoth struct {
	skewedNotifier
	skewedFencer
}

func (s skewedBoth) Acquire(ctx context.Context, key, token string, ttl time.Duration) (bool, error) {
	return s.skewedNotifier.Acquire(ctx, key, token, ttl)
}

func (s skewedBoth) Extend(ctx context.Context, key, token string, ttl time.Duration) (bool, error) {
	return s.skewedNotifier.Extend(ctx, key, token, ttl)
}

func (s skewedBoth) Release(ctx context.Context, key, token string) (bool, error) {
	return s.skewedNotifier.Release(ctx, key, token)
}

func (s skewedBoth) String() string { return s.skewedNotifier.String() }

// The wrappers keep the abilities they promise.
var (
	_ keyserver.Notifier = skewedNotifier{}
	_ keyserver.Fencer   = skewedFencer{}
	_ keyserver.Notifier = skewedBoth{}
	_ keyserver.Fencer   = skewedBoth{}
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
