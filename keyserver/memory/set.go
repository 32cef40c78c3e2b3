package memory

import (
	"context"
	"time"

	"github.com/goredlock/goredlock/internal/check"
	"github.com/goredlock/goredlock/internal/layout"
	"github.com/goredlock/goredlock/keyserver"
)

// AcquireAll stores token under every key for ttl if no key is held by
// another token, or none of them (see keyserver.SetLocker).
func (s *Server) AcquireAll(ctx context.Context, keys []string, token string, ttl time.Duration) (bool, keyserver.Holder, error) {
	var h keyserver.Holder
	ok, err := s.locked(ctx, check.KeysTTL(keys, token, ttl), func() (bool, error) {
		var held bool
		if h, held = s.heldLocked(keys, token); held {
			return false, nil
		}
		for _, k := range keys {
			s.setLocked(k, token, ttl)
		}
		return true, nil
	})
	return ok, h, err
}

// ExtendAll renews every key of the set, or none of them.
func (s *Server) ExtendAll(ctx context.Context, keys []string, token string, ttl time.Duration) (bool, error) {
	ok, _, err := s.AcquireAll(ctx, keys, token, ttl)
	return ok, err
}

// ReleaseAll lets go of every key that holds token, and reports whether
// every one did.
func (s *Server) ReleaseAll(ctx context.Context, keys []string, token string) (bool, error) {
	return s.locked(ctx, check.Keys(keys, token), func() (bool, error) {
		all := true
		for _, k := range keys {
			all = s.releaseLocked(k, token) && all
		}
		return all, nil
	})
}

// heldLocked describes the first of keys that another token holds, if
// one does. s.mu must be held.
func (s *Server) heldLocked(keys []string, token string) (keyserver.Holder, bool) {
	now := s.now()
	for _, k := range keys {
		if e, ok := s.keys[k]; ok && !owns(e.token, token) && now.Before(e.expires) {
			return keyserver.Holder{Left: e.expires.Sub(now), Rank: keyserver.Compare(e.token, token)}, true
		}
	}
	return keyserver.Holder{}, false
}

// AcquireAllInLine is AcquireAll for a call that waits its turn in the
// keys' lines (see keyserver.SetLocker): granted, the caller leaves every
// line; refused, it waits in the line of each key another value holds and
// keeps the keys promised to it, or to a later rank, unless a key promised
// to an earlier rank refused it.
func (s *Server) AcquireAllInLine(ctx context.Context, keys []string, token string, ttl time.Duration) (bool, keyserver.Holder, error) {
	var h keyserver.Holder
	ok, err := s.locked(ctx, check.KeysTTL(keys, token, ttl), func() (bool, error) {
		p := keyserver.PromiseOf(token)
		held, refused := s.heldLocked(keys, token)
		if refused && p != "" {
			refused = s.refusesLocked(keys, token, p)
		}
		switch {
		case !refused:
			for _, k := range keys {
				if e, ok := s.keys[k]; ok && p != "" && takesOver(e.token, p) {
					delete(s.keys, k)
				}
				s.setLocked(k, token, ttl)
				if p != "" {
					s.leaveLocked(k, p)
				}
			}
			return true, nil
		case p == "": // nobody to put in line
			h = held
		default:
			h = s.waitAllLocked(keys, token, p)
		}
		return false, nil
	})
	return ok, h, err
}

// refusesLocked reports whether a key of the set refuses the call whose
// token and promise these are: another value holds it, and it is no
// promise to a later rank, which the call takes over (see waitAllLocked).
// s.mu must be held.
func (s *Server) refusesLocked(keys []string, token, p string) bool {
	now := s.now()
	for _, k := range keys {
		if e, ok := s.keys[k]; ok && !owns(e.token, token) && !takesOver(e.token, p) && now.Before(e.expires) {
			return true
		}
	}
	return false
}

// takesOver reports whether a waiting set whose promise is p takes over a
// key that holds value: a promise to a later rank, which would otherwise
// keep it while it waits, and hold up the earlier one.
func takesOver(value, p string) bool {
	return layout.IsPromise(value) && value > p
}

// waitAllLocked is a refused AcquireAllInLine of the call whose promise is
// p: it joins the lines of the keys others hold, and renews the keys
// promised to it (or to a later rank), or, refused by a key promised to an
// earlier rank, hands each over to the first of its line when that one
// ranks earlier, and joins that line again. It describes the first key
// that refused. s.mu must be held.
func (s *Server) waitAllLocked(keys []string, token, p string) (h keyserver.Holder) {
	now := s.now()
	first, yield := true, false
	var kept uint64
	for i, k := range keys {
		e, held := s.keys[k]
		switch {
		case !held || !now.Before(e.expires) || e.token == token:
		case e.token == p || takesOver(e.token, p):
			kept |= 1 << min(i, 63)
		default:
			ahead := s.joinLocked(k, p)
			if first {
				first = false
				h = keyserver.Holder{Left: e.expires.Sub(now), Rank: keyserver.Compare(e.token, token), Ahead: ahead}
			}
			yield = yield || layout.IsPromise(e.token) && e.token < p
		}
	}
	for i, k := range keys {
		if kept&(1<<min(i, 63)) == 0 {
			continue
		}
		if q := s.lineLocked(k); yield && q != nil && q.waiters[0] < p {
			s.handOverLocked(k) // to the first of the line, an earlier rank
			s.joinLocked(k, p)
			kept &^= 1 << min(i, 63)
			continue
		}
		s.keys[k] = entry{token: p, expires: now.Add(keyserver.LineTTL)}
	}
	h.Promised = kept
	return h
}

// LeaveLines takes the waiter ranked as token out of the lines of every
// key, and passes each key promised to it on.
func (s *Server) LeaveLines(ctx context.Context, keys []string, token string) error {
	_, err := s.locked(ctx, check.Keys(keys, token), func() (bool, error) {
		if p := keyserver.PromiseOf(token); p != "" {
			for _, k := range keys {
				s.leaveOneLocked(k, p)
			}
		}
		return true, nil
	})
	return err
}
