package memory

import (
	"context"
	"time"

	"github.com/goredlock/goredlock/keyserver"
)

var _ keyserver.Delayer = (*Server)(nil)

// Delayed returns the Server as a lock taken with lock-delay d sees it
// (see keyserver.Delayer): its grants and extensions keep the key d past
// their TTL, on the Server's clock (WithNow), so that no token is granted
// it until then unless its holder releases it. The Server's own methods
// set keys with no delay, as Delayed(0) does.
func (s *Server) Delayed(d time.Duration) keyserver.KeyServer {
	return &delayed{s: s, d: max(d, 0)}
}

// delayed is a Server seen through Delayed.
type delayed struct {
	s *Server
	d time.Duration
}

var (
	_ keyserver.Notifier  = (*delayed)(nil)
	_ keyserver.Fencer    = (*delayed)(nil)
	_ keyserver.InProcess = (*delayed)(nil)
)

// InProcess: the view answers at once, as the Server does.
func (v *delayed) InProcess() {}

// Acquire is Server.Acquire with the delay.
func (v *delayed) Acquire(ctx context.Context, key, token string, ttl time.Duration) (bool, error) {
	return v.s.set(ctx, key, token, ttl, v.d)
}

// Extend is Server.Extend with the delay.
func (v *delayed) Extend(ctx context.Context, key, token string, ttl time.Duration) (bool, error) {
	return v.s.set(ctx, key, token, ttl, v.d)
}

// Release is the Server's: deleting or handing over the key ends its delay.
func (v *delayed) Release(ctx context.Context, key, token string) (bool, error) {
	return v.s.Release(ctx, key, token)
}

// AcquireOrHolder is Server.AcquireOrHolder with the delay.
func (v *delayed) AcquireOrHolder(ctx context.Context, key, token string, ttl time.Duration) (bool, keyserver.Holder, error) {
	return v.s.acquireOrHolder(ctx, key, token, ttl, v.d)
}

// AcquireInLine is Server.AcquireInLine with the delay.
func (v *delayed) AcquireInLine(ctx context.Context, key, token string, ttl time.Duration, next string) (bool, keyserver.Holder, error) {
	return v.s.acquireInLine(ctx, key, token, ttl, next, v.d)
}

// AcquireFenced is Server.AcquireFenced with the delay.
func (v *delayed) AcquireFenced(ctx context.Context, key, token string, ttl time.Duration) (bool, uint64, error) {
	return v.s.acquireFenced(ctx, key, token, ttl, v.d)
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
