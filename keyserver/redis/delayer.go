package redis

import (
	"context"
	"time"

	"github.com/goredlock/goredlock/internal/layout"
	"github.com/goredlock/goredlock/keyserver"
)

// The lock-delay of keyserver.Delayer: the lock key lives d past each
// grant (see "Lock-delay" in docs/design.md).

var _ keyserver.Delayer = (*Server)(nil)

// Delayed returns the Server as a lock taken with lock-delay d sees it
// (see keyserver.Delayer): its acquires and extensions keep the key d past
// their TTL and record d under layout.DelayKey, its releases delete the
// record with the key. The view's acquires always run a script: the plain
// SET NX could not set the record.
func (s *Server) Delayed(d time.Duration) keyserver.KeyServer {
	return &delayed{s: s, d: max(d, 0)}
}

// delayed is a Server seen through Delayed.
type delayed struct {
	s *Server
	d time.Duration
}

var (
	_ keyserver.Notifier = (*delayed)(nil)
	_ keyserver.Fencer   = (*delayed)(nil)
)

// words are a lock script's keys and arguments with the delay's: the
// record's key after keys, the TTL plus the delay in ARGV[2], the delay
// after args.
func (v *delayed) words(key, token string, ttl time.Duration, keys []string, args ...string) ([]string, []string) {
	keys = append(keys, layout.DelayKey(key))
	a := append([]string{token, ms(ttl + v.d), promise(token)}, args...)
	return keys, append(a, ms(v.d))
}

// Acquire is Server.Acquire with the delay.
func (v *delayed) Acquire(ctx context.Context, key, token string, ttl time.Duration) (bool, error) {
	return v.set(ctx, "acquire", key, token, ttl)
}

// Extend is Server.Extend with the delay.
func (v *delayed) Extend(ctx context.Context, key, token string, ttl time.Duration) (bool, error) {
	return v.set(ctx, "extend", key, token, ttl)
}

func (v *delayed) set(ctx context.Context, op, key, token string, ttl time.Duration) (bool, error) {
	if err := keyserver.CheckTTL(key, token, ttl); err != nil {
		return false, err
	}
	keys, args := v.words(key, token, ttl, []string{key})
	n, err := v.s.eval(ctx, op, setScript, keys, args...)
	return n == 1, err
}

// Release is Server.Release that also deletes the delay's record.
func (v *delayed) Release(ctx context.Context, key, token string) (bool, error) {
	if err := keyserver.CheckToken(key, token); err != nil {
		return false, err
	}
	keys, args := releaseWords(key, token)
	n, err := v.s.eval(ctx, "release", releaseScript, append(keys, layout.DelayKey(key)), args...)
	return n == 1, err
}

// AcquireOrHolder is Server.AcquireOrHolder with the delay.
func (v *delayed) AcquireOrHolder(ctx context.Context, key, token string, ttl time.Duration) (bool, keyserver.Holder, error) {
	if err := keyserver.CheckTTL(key, token, ttl); err != nil {
		return false, keyserver.Holder{}, err
	}
	keys, args := v.words(key, token, ttl, []string{key})
	return decodeHolder(v.s.evalAny(ctx, "acquire", holderScript, keys, args...))
}

// AcquireInLine is Server.AcquireInLine with the delay: the script at
// once, which takes or keeps the places in line as the Server's does.
func (v *delayed) AcquireInLine(ctx context.Context, key, token string, ttl time.Duration, next string) (bool, keyserver.Holder, error) {
	if err := keyserver.CheckTTL(key, token, ttl); err != nil {
		return false, keyserver.Holder{}, err
	}
	s := v.s
	p, n := layout.PromiseOf(token), layout.PromiseOf(next)
	member, nextMember := "", ""
	if p != "" {
		member = s.sub.turnMember(p)
	}
	if n != "" {
		nextMember = s.sub.turnMember(n)
	}
	cn := s.sub.joining(key, p, n)
	keys, args := v.words(key, token, ttl, []string{key, layout.LineKey(key)}, lineTTL, member, nextMember)
	ok, h, err := decodeHolder(s.evalAny(ctx, "acquire", lineScript, keys, args...))
	if err == nil {
		if ok {
			p = ""
		}
		s.sub.joinedOn(cn, key, p, n)
	}
	return ok, h, err
}

// AcquireFenced is Server.AcquireFenced with the delay.
func (v *delayed) AcquireFenced(ctx context.Context, key, token string, ttl time.Duration) (bool, uint64, error) {
	if err := keyserver.CheckTTL(key, token, ttl); err != nil {
		return false, 0, err
	}
	keys, args := v.words(key, token, ttl, []string{key, layout.FenceKey(key)})
	n, err := v.s.eval(ctx, "acquire", fencedScript, keys, args...)
	if err != nil || n < 0 {
		return false, 0, err
	}
	return n&1 == 1, uint64(n >> 1), nil
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
