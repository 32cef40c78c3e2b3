package redis

import (
	"context"
	"time"

	"github.com/goredlock/goredlock/keyserver"
)

// The waiting line of keyserver.Notifier. A key's line is a sorted set at
// keyserver.LineKey(key) whose scores are all 0, so that its members, the
// waiters' promises (keyserver.PromiseOf), sort by rank; it lives
// keyserver.LineTTL after the last AcquireInLine. A release that finds
// waiters promises the key to the first (the key holds that promise for
// keyserver.ClaimTTL) and publishes the promise on the line's channel, a
// Pub/Sub channel named as the line key; one with nobody waiting deletes
// the key and publishes nothing.

// AcquireOrHolder is Acquire that, when another token holds key, also
// describes the holder: its PTTL (0 for a key without one) and how it
// ranks, read by the script that refuses.
func (s *Server) AcquireOrHolder(ctx context.Context, key, token string, ttl time.Duration) (bool, keyserver.Holder, error) {
	if err := keyserver.CheckArgs(key, token, ttl, true); err != nil {
		return false, keyserver.Holder{}, err
	}
	if !s.sub.contended(key) {
		if set, err := s.setNX(ctx, key, token, ttl); err != nil || set {
			return set, keyserver.Holder{}, err
		}
	}
	return decodeHolder(s.eval(ctx, "acquire", holderScript, []string{key}, token, ms(ttl), promise(token)))
}

// AcquireInLine is AcquireOrHolder for a call that waits its turn: a
// refused caller takes or keeps its place in key's line, a granted one
// leaves it, and a key promised to the caller's call is claimed.
//
// A key that no waiter of this process watches, or watched a moment ago,
// is tried first with a plain SET NX, as Acquire does; one that is
// contended goes to the script at once, as the SET NX would be refused.
func (s *Server) AcquireInLine(ctx context.Context, key, token string, ttl time.Duration) (bool, keyserver.Holder, error) {
	p := keyserver.PromiseOf(token)
	if p == "" { // no rank, no place in line
		return s.AcquireOrHolder(ctx, key, token, ttl)
	}
	if err := keyserver.CheckArgs(key, token, ttl, true); err != nil {
		return false, keyserver.Holder{}, err
	}
	if !s.sub.contended(key) {
		if set, err := s.setNX(ctx, key, token, ttl); err != nil || set {
			return set, keyserver.Holder{}, err
		}
	}
	return decodeHolder(s.eval(ctx, "acquire", lineScript, []string{key, keyserver.LineKey(key)}, token, ms(ttl), p, lineTTL))
}

// decodeHolder reads the reply of holderScript or lineScript: odd when
// granted, and otherwise the holder's TTL left and rank (see holder).
func decodeHolder(n int64, err error) (bool, keyserver.Holder, error) {
	switch {
	case err != nil || n < 0:
		return false, keyserver.Holder{}, err
	case n&1 == 1:
		return true, keyserver.Holder{}, nil
	}
	return false, keyserver.Holder{Left: time.Duration(n>>3) * time.Millisecond, Rank: keyserver.Order(n >> 1 & 3)}, nil
}

// WatchTurn watches key's line for the waiter ranked as token. It returns
// once Redis has confirmed the subscription to the line's channel (at once
// when a waiter of this process already shares it), and then looks at the
// key once more (one GET), so that a turn that came between the waiter's
// refusal and the subscription is not missed: a key that is free, or
// promised to the waiter, closes turn at once.
func (s *Server) WatchTurn(ctx context.Context, key, token string, moved func()) (<-chan struct{}, func(), error) {
	if err := keyserver.CheckArgs(key, token, 0, false); err != nil {
		return nil, nil, err
	}
	if err := s.enter(ctx, "watch", key); err != nil {
		return nil, nil, err
	}
	defer s.inflight.Done()
	p := keyserver.PromiseOf(token)
	w, err := s.sub.watch(ctx, key, p, moved)
	if err != nil {
		return nil, nil, s.fail("watch", key, err)
	}
	v, held, err := s.get(ctx, "watch", key)
	if err != nil {
		s.sub.stop(w)
		return nil, nil, err
	}
	if !held || (p != "" && v == p) {
		s.sub.fire(w)
	}
	return w.turn, func() { s.sub.stop(w) }, nil
}

// LeaveLine takes the waiter ranked as token out of key's line, and passes
// a promise made to it on.
func (s *Server) LeaveLine(ctx context.Context, key, token string) error {
	if err := keyserver.CheckArgs(key, token, 0, false); err != nil {
		return err
	}
	p := keyserver.PromiseOf(token)
	if p == "" {
		return nil
	}
	_, err := s.eval(ctx, "leave line", leaveScript, []string{key, keyserver.LineKey(key)}, p, claimTTL)
	return err
}
