package redis

import (
	"context"
	"fmt"
	"time"

	"github.com/goredlock/goredlock/internal/layout"
	"github.com/goredlock/goredlock/keyserver"
)

// The waiting line of keyserver.Notifier: a sorted set of waiters'
// promises at layout.LineKey(key) (see "Lines" in docs/design.md).

// AcquireOrHolder is Acquire that, when another token holds key, also
// describes the holder: its PTTL (0 for a key without one) and how it
// ranks, read by the script that refuses.
func (s *Server) AcquireOrHolder(ctx context.Context, key, token string, ttl time.Duration) (bool, keyserver.Holder, error) {
	if err := keyserver.CheckTTL(key, token, ttl); err != nil {
		return false, keyserver.Holder{}, err
	}
	if !s.sub.contended(key) {
		if set, err := s.setNX(ctx, key, token, ttl); err != nil || set {
			return set, keyserver.Holder{}, err
		}
	}
	return s.acquireOrHolderTaken(ctx, key, token, ttl)
}

// acquireOrHolderTaken is AcquireOrHolder past its SET NX: the script.
func (s *Server) acquireOrHolderTaken(ctx context.Context, key, token string, ttl time.Duration) (bool, keyserver.Holder, error) {
	return decodeHolder(s.evalAny(ctx, "acquire", setAllScript, []string{key}, token, ms(ttl), promise(token))) // a set of one key
}

// AcquireInLine is AcquireOrHolder for a call that waits its turn: a
// refused caller takes or keeps its place in key's line, a granted one
// leaves it, and a key promised to the caller's call is claimed. next, if
// it carries a rank, takes or keeps its place in line either way: another
// waiter of this process, which so needs no refused attempt of its own.
// A refusal reports the waiters ahead of the caller in Holder.Ahead.
func (s *Server) AcquireInLine(ctx context.Context, key, token string, ttl time.Duration, next string) (bool, keyserver.Holder, error) {
	if err := keyserver.CheckTTL(key, token, ttl); err != nil {
		return false, keyserver.Holder{}, err
	}
	// A waiter is put in line by its promise, which a ranked token has.
	ranked, nextRanked := layout.RankOf(token) != "", layout.RankOf(next) != ""
	if !ranked && !nextRanked { // nobody to put in line
		return s.AcquireOrHolder(ctx, key, token, ttl)
	}
	if !nextRanked && !s.sub.contended(key) {
		if set, err := s.setNX(ctx, key, token, ttl); err != nil || set {
			return set, keyserver.Holder{}, err
		}
	}
	return s.acquireInLineTaken(ctx, key, token, ttl, next)
}

// acquireInLineTaken is AcquireInLine past its SET NX (or without one):
// the script, which takes or keeps the places in line.
func (s *Server) acquireInLineTaken(ctx context.Context, key, token string, ttl time.Duration, next string) (bool, keyserver.Holder, error) {
	p, n := keyserver.PromiseOf(token), keyserver.PromiseOf(next)
	member, nextMember := "", ""
	if p != "" {
		member = s.sub.turnMember(p)
	}
	if n != "" {
		nextMember = s.sub.turnMember(n)
	}
	cn := s.sub.joining(key, p, n) // before the places are taken: see subscriber.joinedOn
	ok, h, err := decodeHolder(s.evalAny(ctx, "acquire", lineScript, []string{key, layout.LineKey(key)},
		token, ms(ttl), promise(token), lineTTL, member, nextMember))
	if err == nil {
		if ok {
			p = "" // granted: out of line
		}
		s.sub.joinedOn(cn, key, p, n)
	}
	return ok, h, err
}

// decodeHolder reads the reply of setAllScript or lineScript: 1 when
// granted, else {left, order, ahead} (the prelude's holder, in
// lua/prelude.lua), which setInLineScript follows with a '1' for each key
// kept promised to the caller.
func decodeHolder(reply any, err error) (bool, keyserver.Holder, error) {
	if err != nil || reply == int64(1) {
		return err == nil, keyserver.Holder{}, err
	}
	parts, _ := reply.([]any)
	var n [3]int64
	for i := range n {
		if i >= len(parts) {
			return false, keyserver.Holder{}, fmt.Errorf("unexpected reply %v to a lock script", reply)
		}
		n[i], _ = parts[i].(int64)
	}
	h := keyserver.Holder{Left: time.Duration(n[0]) * time.Millisecond, Rank: int(n[1]), Ahead: int(n[2])}
	if len(parts) > 3 {
		promised, _ := text(parts[3])
		for i := range min(len(promised), 64) {
			if promised[i] == '1' {
				h.Promised |= 1 << i
			}
		}
	}
	return false, h, nil
}

// WatchTurn watches key's line for the waiter ranked as token: turn is
// closed when the key is promised to it, or when the subscriber connection
// breaks or the Server closes. It returns once the subscription is confirmed,
// then looks at the key once more (one GET), so that a turn that came since
// the refusal is not missed, unless the subscription already stood when the
// waiter's place was taken (see "The subscriber" in docs/design.md).
func (s *Server) WatchTurn(ctx context.Context, key, token string) (<-chan struct{}, func(), error) {
	if err := keyserver.CheckToken(key, token); err != nil {
		return nil, nil, err
	}
	if err := s.enter(ctx, "watch", key); err != nil {
		return nil, nil, err
	}
	defer s.inflight.Done()
	p := keyserver.PromiseOf(token)
	w, seen, err := s.sub.watch(ctx, key, p)
	if err != nil {
		return nil, nil, s.fail("watch", key, err)
	}
	if p != "" && !seen {
		v, _, err := s.get(ctx, "watch", key)
		if err != nil {
			s.sub.stop(w)
			return nil, nil, err
		}
		if v == p {
			s.sub.fire(w)
		}
	}
	return w.turn, func() { s.sub.stop(w) }, nil
}

// LeaveLine takes the waiter ranked as token out of key's line, and passes
// a promise made to it on.
func (s *Server) LeaveLine(ctx context.Context, key, token string) error {
	if err := keyserver.CheckToken(key, token); err != nil {
		return err
	}
	p := keyserver.PromiseOf(token)
	if p == "" {
		return nil
	}
	_, err := s.eval(ctx, "leave line", leaveAllScript, []string{key, layout.LineKey(key)}, s.sub.turnMember(p), p, claimTTL)
	return err
}

// ReleaseInLine is Release for a waiter giving back what a failed attempt
// was granted: where others wait, the script puts it in key's line again
// before it hands the key over, so that a waiter behind it is not promised
// the key instead. Its next WatchTurn relies on the subscription either
// way: a turn for it can come only if it joined.
func (s *Server) ReleaseInLine(ctx context.Context, key, token string) (bool, error) {
	p := keyserver.PromiseOf(token)
	if p == "" {
		return s.Release(ctx, key, token)
	}
	if err := keyserver.CheckToken(key, token); err != nil {
		return false, err
	}
	cn := s.sub.joining(key, p) // before the place is taken: see subscriber.joinedOn
	n, err := s.eval(ctx, "release", releaseInLine, []string{key, layout.LineKey(key)}, token, claimTTL, s.sub.turnMember(p), lineTTL)
	if n == 1 && err == nil {
		s.sub.joinedOn(cn, key, p)
	}
	return n == 1, err
}
