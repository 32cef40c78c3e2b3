package memory

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/goredlock/goredlock/internal/layout"
	"github.com/goredlock/goredlock/keyserver"
)

var _ keyserver.Notifier = (*Server)(nil)

// line is one key's line of waiters: the promises (keyserver.PromiseOf)
// of the calls waiting for it, earliest rank first.
type line struct {
	waiters []string
	expires time.Time
}

// turnWatch is one WatchTurn until it is stopped.
type turnWatch struct {
	promise string // the waiter's, keyserver.PromiseOf its token
	turn    chan struct{}
	fired   bool
}

// fire closes w's channel once. s.mu must be held.
func (w *turnWatch) fire() {
	if !w.fired {
		w.fired = true
		close(w.turn)
	}
}

// AcquireOrHolder is Acquire that, when another token holds key, also
// returns how long that key has left and how the holder ranks.
func (s *Server) AcquireOrHolder(ctx context.Context, key, token string, ttl time.Duration) (bool, keyserver.Holder, error) {
	var h keyserver.Holder
	ok, err := s.locked(ctx, keyserver.CheckTTL(key, token, ttl), func() (bool, error) {
		var ok bool
		ok, h = s.acquireLocked(key, token, ttl)
		return ok, nil
	})
	return ok, h, err
}

// AcquireInLine is AcquireOrHolder for a call that waits its turn: a
// refused caller takes or keeps its place in key's line, a granted one
// leaves it; next, if not empty, takes or keeps its place either way.
func (s *Server) AcquireInLine(ctx context.Context, key, token string, ttl time.Duration, next string) (bool, keyserver.Holder, error) {
	var h keyserver.Holder
	ok, err := s.locked(ctx, keyserver.CheckTTL(key, token, ttl), func() (bool, error) {
		var ok bool
		ok, h = s.acquireLocked(key, token, ttl)
		if n := keyserver.PromiseOf(next); n != "" {
			s.joinLocked(key, n)
		}
		if ok && s.lines[key] == nil {
			return true, nil // no line to leave
		}
		p := keyserver.PromiseOf(token)
		if p == "" {
			return ok, nil
		}
		if ok {
			s.leaveLocked(key, p)
			return true, nil
		}
		h.Ahead = s.joinLocked(key, p)
		return false, nil
	})
	return ok, h, err
}

// joinLocked puts the waiter whose promise is p in key's line, or leaves
// it its place, renews the line, and returns how many wait ahead of it.
// s.mu must be held.
func (s *Server) joinLocked(key, p string) int {
	q := s.lineLocked(key)
	if q == nil {
		q = &line{}
		s.lines[key] = q
	}
	i, found := slices.BinarySearch(q.waiters, p)
	if !found {
		q.waiters = slices.Insert(q.waiters, i, p)
		s.contendedLocked(key)
	}
	q.expires = s.now().Add(keyserver.LineTTL)
	return i
}

// acquireLocked stores key=token unless another token holds it, and
// describes the holder that refused. s.mu must be held.
func (s *Server) acquireLocked(key, token string, ttl time.Duration) (bool, keyserver.Holder) {
	if s.setLocked(key, token, ttl) {
		return true, keyserver.Holder{}
	}
	k := s.keys[key]
	return false, keyserver.Holder{Left: k.expires.Sub(s.now()), Rank: keyserver.Compare(k.token, token)}
}

// WatchTurn watches key's line for the waiter ranked as token: its channel
// is closed when key is promised to that waiter, now or later, and by
// Close.
func (s *Server) WatchTurn(ctx context.Context, key, token string) (<-chan struct{}, func(), error) {
	w := &turnWatch{promise: keyserver.PromiseOf(token), turn: make(chan struct{})}
	_, err := s.locked(ctx, keyserver.CheckToken(key, token), func() (bool, error) {
		ws := s.turns[key]
		if ws == nil {
			ws = make(map[*turnWatch]struct{})
			s.turns[key] = ws
		}
		ws[w] = struct{}{}
		// Look again, now that the watch is in place.
		if e, held := s.keys[key]; held && w.promise != "" && e.token == w.promise && s.now().Before(e.expires) {
			w.fire()
		}
		return true, nil
	})
	if err != nil {
		return nil, nil, err
	}
	return w.turn, unwatch(&s.mu, s.turns, key, w), nil
}

// unwatch returns the stop of watch w of key in watches: it takes w out,
// and key with it when w was its last watch, once however often it is
// called. mu guards watches.
func unwatch[W comparable](mu *sync.Mutex, watches map[string]map[W]struct{}, key string, w W) func() {
	var once sync.Once
	return func() {
		once.Do(func() {
			mu.Lock()
			defer mu.Unlock()
			if ws := watches[key]; ws != nil {
				delete(ws, w)
				if len(ws) == 0 {
					delete(watches, key)
				}
			}
		})
	}
}

// LeaveLine takes the waiter ranked as token out of key's line, and passes
// a promise made to it on.
func (s *Server) LeaveLine(ctx context.Context, key, token string) error {
	_, err := s.locked(ctx, keyserver.CheckToken(key, token), func() (bool, error) {
		if p := keyserver.PromiseOf(token); p != "" {
			s.leaveOneLocked(key, p)
		}
		return true, nil
	})
	return err
}

// ReleaseInLine puts the waiter ranked as token back in key's line, when
// token holds key and others wait there, before releasing it as Release
// does.
func (s *Server) ReleaseInLine(ctx context.Context, key, token string) (bool, error) {
	return s.locked(ctx, keyserver.CheckToken(key, token), func() (bool, error) {
		if e, held := s.keys[key]; held && e.token == token && s.now().Before(e.expires) {
			if p := keyserver.PromiseOf(token); p != "" && s.lineLocked(key) != nil {
				s.joinLocked(key, p)
			}
		}
		return s.releaseLocked(key, token), nil
	})
}

// leaveOneLocked is LeaveLine of the call whose promise is p. s.mu must be
// held.
func (s *Server) leaveOneLocked(key, p string) {
	s.leaveLocked(key, p)
	if e, held := s.keys[key]; held && e.token == p && s.now().Before(e.expires) {
		s.handOverLocked(key)
	}
}

// leaveLocked takes the waiter whose promise is p out of key's line. s.mu
// must be held.
func (s *Server) leaveLocked(key, p string) {
	q := s.lineLocked(key)
	if q == nil {
		return
	}
	if i, found := slices.BinarySearch(q.waiters, p); found {
		q.waiters = slices.Delete(q.waiters, i, i+1)
	}
	if len(q.waiters) == 0 {
		delete(s.lines, key)
	}
}

// lineLocked returns key's line, nil when it has none or it expired. s.mu
// must be held.
func (s *Server) lineLocked(key string) *line {
	q := s.lines[key]
	if q != nil && !s.now().Before(q.expires) {
		delete(s.lines, key)
		return nil
	}
	return q
}

// handOverLocked lets go of key, which its holder released: it promises
// key to the earliest waiter in line and tells that waiter, or deletes key
// when nobody waits. s.mu must be held.
func (s *Server) handOverLocked(key string) {
	q := s.lineLocked(key)
	if q == nil {
		delete(s.keys, key)
		return
	}
	next := q.waiters[0]
	s.leaveLocked(key, next)
	s.keys[key] = entry{token: next, expires: s.now().Add(layout.ClaimTTL)}
	for w := range s.turns[key] {
		if w.promise == next {
			w.fire()
		}
	}
}
