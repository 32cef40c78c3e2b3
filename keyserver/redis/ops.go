package redis

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/goredlock/goredlock/internal/layout"
	"github.com/goredlock/goredlock/keyserver"
)

// Acquire stores key=token for ttl if key is absent, or renews it if it
// already holds token (or is promised to token's call).
func (s *Server) Acquire(ctx context.Context, key, token string, ttl time.Duration) (bool, error) {
	if err := keyserver.CheckTTL(key, token, ttl); err != nil {
		return false, err
	}
	if set, err := s.setNX(ctx, key, token, ttl); err != nil || set {
		return set, err
	}
	return s.acquireTaken(ctx, key, token, ttl)
}

// acquireTaken is Acquire of a key that a SET NX found taken: it may hold
// token, or be promised to token's call.
func (s *Server) acquireTaken(ctx context.Context, key, token string, ttl time.Duration) (bool, error) {
	keys, args := setWords(key, token, ttl)
	n, err := s.eval(ctx, "acquire", setScript, keys, args...)
	return n == 1, err
}

// Extend renews key if it holds token (or is promised to token's call),
// and stores it again if it is absent.
func (s *Server) Extend(ctx context.Context, key, token string, ttl time.Duration) (bool, error) {
	if err := keyserver.CheckTTL(key, token, ttl); err != nil {
		return false, err
	}
	keys, args := setWords(key, token, ttl)
	n, err := s.eval(ctx, "extend", setScript, keys, args...)
	return n == 1, err
}

// Release lets go of key if it holds token itself: the key is promised to
// the first waiter in its line, which is told, or deleted when nobody
// waits.
func (s *Server) Release(ctx context.Context, key, token string) (bool, error) {
	if err := keyserver.CheckToken(key, token); err != nil {
		return false, err
	}
	keys, args := releaseWords(key, token)
	n, err := s.eval(ctx, "release", releaseScript, keys, args...)
	return n == 1, err
}

// AcquireFenced is Acquire, and reads key's fence counter, kept under
// layout.FenceKey(key) with no TTL, in the same script (setScript given
// the counter's key).
func (s *Server) AcquireFenced(ctx context.Context, key, token string, ttl time.Duration) (bool, uint64, error) {
	if err := keyserver.CheckTTL(key, token, ttl); err != nil {
		return false, 0, err
	}
	n, err := s.eval(ctx, "acquire", setScript, []string{key, layout.FenceKey(key)}, token, ms(ttl), promise(token))
	if err != nil || n < 0 {
		return false, 0, err
	}
	return n&1 == 1, uint64(n >> 1), nil
}

// RaiseFence sets key's fence counter to fence if it holds less, and
// returns the counter as it was.
func (s *Server) RaiseFence(ctx context.Context, key string, fence uint64) (uint64, error) {
	if err := keyserver.CheckKey(key); err != nil {
		return 0, err
	}
	if fence > keyserver.MaxFence {
		return 0, fmt.Errorf("%w: fence %d of key %q is above %d", keyserver.ErrInvalidArgument, fence, key, uint64(keyserver.MaxFence))
	}
	n, err := s.eval(ctx, "raise fence", raiseScript, []string{layout.FenceKey(key)}, strconv.FormatUint(fence, 10))
	if err != nil || n < 0 {
		return 0, err
	}
	return uint64(n), nil
}

// promise is what the scripts take for the caller's promise: the value a
// key promised to token's call holds (keyserver.PromiseOf), or token itself
// for a token without a rank, which no promise is ever made to.
func promise(token string) string {
	if p := keyserver.PromiseOf(token); p != "" {
		return p
	}
	return token
}

// The TTLs of the line, in the milliseconds the scripts take.
var (
	claimTTL = ms(layout.ClaimTTL)
	lineTTL  = ms(keyserver.LineTTL)
)

// setWords are setScript's keys and arguments, for the script of an
// Acquire whose SET NX was refused and for Extend: a key holding the token
// or the promise to its call is the caller's (see lua/acquire.lua).
func setWords(key, token string, ttl time.Duration) (keys, args []string) {
	w := []string{key, token, ms(ttl), promise(token)}
	return w[:1:1], w[1:] // one allocation, not two
}

// releaseWords are releaseScript's keys and arguments.
func releaseWords(key, token string) (keys, args []string) {
	w := []string{key, layout.LineKey(key), token, claimTTL}
	return w[:2:2], w[2:]
}
