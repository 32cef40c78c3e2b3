package static

import (
	"context"
	"time"

	"github.com/goredlock/goredlock/keyserver"
)

var _ keyserver.Delayer = (*Server)(nil)

// Delayed returns the Server as a lock taken with lock-delay d sees it
// (see keyserver.Delayer): its calls follow the same scripts and are
// logged with Delayed set and LockDelay d; those answered from the store
// keep the key d past their TTL there.
func (s *Server) Delayed(d time.Duration) keyserver.KeyServer {
	d = max(d, 0)
	st := s.store.Delayed(d)
	return &delayed{s: s, d: d, n: st.(keyserver.Notifier), f: st.(keyserver.Fencer)}
}

// delayed is a Server seen through Delayed: n and f are its store's view.
type delayed struct {
	s *Server
	d time.Duration
	n keyserver.Notifier
	f keyserver.Fencer
}

var (
	_ keyserver.Notifier = (*delayed)(nil)
	_ keyserver.Fencer   = (*delayed)(nil)
)

// call is the logged call of op with the delay.
func (v *delayed) call(op Op, key, token string, ttl time.Duration) Call {
	return Call{Op: op, Key: key, Token: token, TTL: ttl, Delayed: true, LockDelay: v.d}
}

// Acquire is Server.Acquire with the delay.
func (v *delayed) Acquire(ctx context.Context, key, token string, ttl time.Duration) (bool, error) {
	_, ok, err := v.s.call(ctx, v.call(OpAcquire, key, token, ttl), v.n.Acquire)
	return ok, err
}

// Extend is Server.Extend with the delay.
func (v *delayed) Extend(ctx context.Context, key, token string, ttl time.Duration) (bool, error) {
	_, ok, err := v.s.call(ctx, v.call(OpExtend, key, token, ttl), v.n.Extend)
	return ok, err
}

// Release is Server.Release, logged with the delay.
func (v *delayed) Release(ctx context.Context, key, token string) (bool, error) {
	return v.s.release(ctx, v.call(OpRelease, key, token, 0), v.n)
}

// AcquireOrHolder is Server.AcquireOrHolder with the delay.
func (v *delayed) AcquireOrHolder(ctx context.Context, key, token string, ttl time.Duration) (bool, keyserver.Holder, error) {
	return v.s.acquireHolder(ctx, v.call(OpAcquire, key, token, ttl), v.n.AcquireOrHolder)
}

// AcquireInLine is Server.AcquireInLine with the delay.
func (v *delayed) AcquireInLine(ctx context.Context, key, token string, ttl time.Duration, next string) (bool, keyserver.Holder, error) {
	return v.s.acquireHolder(ctx, v.call(OpAcquire, key, token, ttl), func(ctx context.Context, key, token string, ttl time.Duration) (bool, keyserver.Holder, error) {
		return v.n.AcquireInLine(ctx, key, token, ttl, next)
	})
}

// AcquireFenced is Server.AcquireFenced with the delay.
func (v *delayed) AcquireFenced(ctx context.Context, key, token string, ttl time.Duration) (bool, uint64, error) {
	return v.s.acquireFenced(ctx, v.call(OpAcquire, key, token, ttl), v.f)
}

// RaiseFence is the Server's.
func (v *delayed) RaiseFence(ctx context.Context, key string, fence uint64) (uint64, error) {
	return v.s.RaiseFence(ctx, key, fence)
}

// WatchTurn is the Server's.
func (v *delayed) WatchTurn(ctx context.Context, key, token string) (<-chan struct{}, func(), error) {
	return v.s.WatchTurn(ctx, key, token)
}

// LeaveLine is the Server's.
func (v *delayed) LeaveLine(ctx context.Context, key, token string) error {
	return v.s.LeaveLine(ctx, key, token)
}

// WatchContention is the Server's.
func (v *delayed) WatchContention(ctx context.Context, key, token string) (contended, broken <-chan struct{}, stop func(), err error) {
	return v.s.WatchContention(ctx, key, token)
}
