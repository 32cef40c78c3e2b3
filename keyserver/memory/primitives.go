package memory

import (
	"context"
	"time"

	"github.com/goredlock/goredlock/internal/layout"
	"github.com/goredlock/goredlock/keyserver"
)

var (
	_ keyserver.Semaphorer = (*Server)(nil)
	_ keyserver.RWLocker   = (*Server)(nil)
	_ keyserver.Elector    = (*Server)(nil)
)

// prims is the state of the primitives beside locks: semaphores,
// read-write locks and elections, and their watches. Guarded by the
// Server's mu; its maps are made when first needed.
type prims struct {
	sems    map[string]*semaphore
	rws     map[string]*rwHolds
	leaders map[string]leader
	watches map[string]map[*keyWatch]struct{} // by kind and key (watchKey)
}

// semaphore is one semaphore: its stored permit count and held slots.
type semaphore struct {
	permits int
	slots   map[int]entry
}

// rwHolds is one read-write key: its writer or its readers, and the marks
// of writers waiting (by layout.WaiterOf) with their expiry.
type rwHolds struct {
	writer  entry
	readers map[string]time.Time
	waiting map[string]time.Time
}

// leader is an election's leader and its value.
type leader struct {
	entry
	value string
}

// keyWatch is one Watch* call until it is stopped.
type keyWatch struct {
	ch    chan struct{}
	fired bool
}

// The kinds of watched keys.
const (
	semKind    = "semaphore\x00"
	rwKind     = "rw\x00"
	leaderKind = "election\x00"
)

// semLocked returns key's semaphore with its expired slots dropped, nil
// when it has none. s.mu must be held.
func (s *Server) semLocked(key string) *semaphore {
	m := s.prims.sems[key]
	if m == nil {
		return nil
	}
	now := s.now()
	for i, e := range m.slots {
		if !now.Before(e.expires) {
			delete(m.slots, i)
		}
	}
	if len(m.slots) == 0 {
		delete(s.prims.sems, key)
		return nil
	}
	return m
}

// AcquirePermit takes slot of the semaphore key for token if it is free
// or token's, after checking permits against the stored count.
func (s *Server) AcquirePermit(ctx context.Context, key string, permits, slot int, token string, ttl time.Duration) (bool, keyserver.Permits, error) {
	var p keyserver.Permits
	ok, err := s.locked(ctx, keyserver.CheckPermit(key, permits, slot, token, ttl), func() (bool, error) {
		m := s.semLocked(key)
		if m == nil {
			m = &semaphore{permits: permits, slots: make(map[int]entry)}
		} else if m.permits != permits {
			return false, keyserver.PermitsDiffer(key, permits, m.permits)
		}
		ok := true
		if e, held := m.slots[slot]; held && e.token != token {
			ok = false
		} else {
			s.setSlotLocked(key, m, slot, token, ttl)
		}
		p = m.describe(s.now())
		return ok, nil
	})
	return ok, p, err
}

// describe lists m's free slots (at most keyserver.MaxFreeHint) and the
// shortest TTL left of its held ones.
func (m *semaphore) describe(now time.Time) keyserver.Permits {
	var p keyserver.Permits
	for i := 0; i < m.permits && len(p.Free) < keyserver.MaxFreeHint; i++ {
		if _, held := m.slots[i]; !held {
			p.Free = append(p.Free, i)
		}
	}
	for _, e := range m.slots {
		if l := e.expires.Sub(now); p.Left == 0 || l < p.Left {
			p.Left = l
		}
	}
	return p
}

// setSlotLocked stores slot of m, the semaphore key, for token. s.mu must
// be held.
func (s *Server) setSlotLocked(key string, m *semaphore, slot int, token string, ttl time.Duration) {
	if s.prims.sems == nil {
		s.prims.sems = make(map[string]*semaphore)
	}
	s.prims.sems[key] = m
	m.slots[slot] = entry{token: token, expires: s.now().Add(ttl.Truncate(time.Millisecond))}
}

// ExtendPermit renews slot if it holds token, or stores it again if it is
// free.
func (s *Server) ExtendPermit(ctx context.Context, key string, slot int, token string, ttl time.Duration) (bool, error) {
	bad := keyserver.CheckTTL(key, token, ttl)
	if bad == nil {
		bad = keyserver.CheckSlot(key, slot)
	}
	return s.locked(ctx, bad, func() (bool, error) {
		m := s.semLocked(key)
		if m == nil {
			m = &semaphore{permits: slot + 1, slots: make(map[int]entry)}
		}
		if e, held := m.slots[slot]; held && e.token != token {
			return false, nil
		}
		s.setSlotLocked(key, m, slot, token, ttl)
		return true, nil
	})
}

// ReleasePermit frees slot if it holds token, and wakes the semaphore's
// watches.
func (s *Server) ReleasePermit(ctx context.Context, key string, slot int, token string) (bool, error) {
	bad := keyserver.CheckToken(key, token)
	if bad == nil {
		bad = keyserver.CheckSlot(key, slot)
	}
	return s.locked(ctx, bad, func() (bool, error) {
		m := s.semLocked(key)
		if m == nil {
			return false, nil
		}
		if e, held := m.slots[slot]; !held || e.token != token {
			return false, nil
		}
		delete(m.slots, slot)
		if len(m.slots) == 0 {
			delete(s.prims.sems, key)
		}
		s.wakeLocked(semKind + key)
		return true, nil
	})
}

// WatchPermits watches the semaphore key for the release of a slot. Every
// watcher is woken: in one process the herd is cheap.
func (s *Server) WatchPermits(ctx context.Context, key, _ string) (<-chan struct{}, func(), error) {
	return s.watch(ctx, semKind, key)
}

// rwLocked returns key's holds with the expired ones dropped, nil when
// nothing is left. s.mu must be held.
func (s *Server) rwLocked(key string) *rwHolds {
	h := s.prims.rws[key]
	if h == nil {
		return nil
	}
	now := s.now()
	if h.writer.token != "" && !now.Before(h.writer.expires) {
		h.writer = entry{}
	}
	for t, exp := range h.readers {
		if !now.Before(exp) {
			delete(h.readers, t)
		}
	}
	for w, exp := range h.waiting {
		if !now.Before(exp) {
			delete(h.waiting, w)
		}
	}
	if h.writer.token == "" && len(h.readers) == 0 && len(h.waiting) == 0 {
		delete(s.prims.rws, key)
		return nil
	}
	return h
}

// rwMake returns key's holds, made if there are none. s.mu must be held.
func (s *Server) rwMake(key string) *rwHolds {
	if h := s.rwLocked(key); h != nil {
		return h
	}
	if s.prims.rws == nil {
		s.prims.rws = make(map[string]*rwHolds)
	}
	h := &rwHolds{readers: make(map[string]time.Time), waiting: make(map[string]time.Time)}
	s.prims.rws[key] = h
	return h
}

// AcquireRead adds token to key's readers unless a writer holds the key
// or waits for it.
func (s *Server) AcquireRead(ctx context.Context, key, token string, ttl time.Duration) (bool, keyserver.Holder, error) {
	var hd keyserver.Holder
	ok, err := s.locked(ctx, keyserver.CheckTTL(key, token, ttl), func() (bool, error) {
		h := s.rwMake(key)
		now := s.now()
		if _, reading := h.readers[token]; !reading {
			if left, blocked := h.blocksReaders(now); blocked {
				hd.Left = left
				return false, nil
			}
		}
		h.readers[token] = now.Add(ttl.Truncate(time.Millisecond))
		return true, nil
	})
	return ok, hd, err
}

// blocksReaders reports whether a writer holds h or waits for it, and for
// how long at most.
func (h *rwHolds) blocksReaders(now time.Time) (time.Duration, bool) {
	var left time.Duration
	if h.writer.token != "" {
		left = h.writer.expires.Sub(now)
	}
	for _, exp := range h.waiting {
		left = max(left, exp.Sub(now))
	}
	return left, left > 0
}

// AcquireWrite stores token as key's writer if nobody holds the key; a
// refused caller that will wait marks a writer waiting.
func (s *Server) AcquireWrite(ctx context.Context, key, token string, ttl time.Duration, wait bool) (bool, keyserver.Holder, error) {
	var hd keyserver.Holder
	ok, err := s.locked(ctx, keyserver.CheckTTL(key, token, ttl), func() (bool, error) {
		h := s.rwMake(key)
		now := s.now()
		w := layout.WaiterOf(token)
		if (h.writer.token != "" && h.writer.token != token) || len(h.readers) > 0 {
			hd.Left = h.soonest(now)
			if wait {
				h.waiting[w] = now.Add(keyserver.WriterWaitTTL)
			}
			return false, nil
		}
		delete(h.waiting, w)
		h.writer = entry{token: token, expires: now.Add(ttl.Truncate(time.Millisecond))}
		return true, nil
	})
	return ok, hd, err
}

// soonest is the shortest TTL left of h's holds.
func (h *rwHolds) soonest(now time.Time) time.Duration {
	var left time.Duration
	if h.writer.token != "" {
		left = h.writer.expires.Sub(now)
	}
	for _, exp := range h.readers {
		if l := exp.Sub(now); left == 0 || l < left {
			left = l
		}
	}
	return left
}

// ExtendHold renews token's hold of key, or stores it again where it
// would be granted.
func (s *Server) ExtendHold(ctx context.Context, key, token string, ttl time.Duration, write bool) (bool, error) {
	return s.locked(ctx, keyserver.CheckTTL(key, token, ttl), func() (bool, error) {
		h := s.rwMake(key)
		now := s.now()
		expires := now.Add(ttl.Truncate(time.Millisecond))
		if write {
			if (h.writer.token != "" && h.writer.token != token) || len(h.readers) > 0 {
				return false, nil
			}
			h.writer = entry{token: token, expires: expires}
			return true, nil
		}
		if _, reading := h.readers[token]; !reading && h.writer.token != "" {
			return false, nil
		}
		h.readers[token] = expires
		return true, nil
	})
}

// ReleaseHold ends token's hold of key and wakes key's watches.
func (s *Server) ReleaseHold(ctx context.Context, key, token string, write bool) (bool, error) {
	return s.locked(ctx, keyserver.CheckToken(key, token), func() (bool, error) {
		h := s.rwLocked(key)
		if h == nil {
			return false, nil
		}
		switch _, reading := h.readers[token]; {
		case write && h.writer.token == token:
			h.writer = entry{}
		case !write && reading:
			delete(h.readers, token)
		default:
			return false, nil
		}
		s.rwLocked(key) // drops it when empty
		s.wakeLocked(rwKind + key)
		return true, nil
	})
}

// WatchHolds watches key for the release of a hold; every watcher is
// woken.
func (s *Server) WatchHolds(ctx context.Context, key, _ string, _ bool) (<-chan struct{}, func(), error) {
	return s.watch(ctx, rwKind, key)
}

// leaderLocked returns key's leader, the zero leader when none leads.
// s.mu must be held.
func (s *Server) leaderLocked(key string) leader {
	l, ok := s.prims.leaders[key]
	if ok && !s.now().Before(l.expires) {
		delete(s.prims.leaders, key)
		return leader{}
	}
	return l
}

// AcquireLeader stores token and value as key's leader if none leads or
// token does, and reads key's fence counter.
func (s *Server) AcquireLeader(ctx context.Context, key, token, value string, ttl time.Duration) (bool, uint64, error) {
	var fence uint64
	ok, err := s.locked(ctx, checkLeader(key, token, value, ttl), func() (bool, error) {
		fence = s.fences[key]
		return s.setLeaderLocked(key, token, value, ttl), nil
	})
	return ok, fence, err
}

// ExtendLeader renews key if token leads, or stores token and value again
// if none does.
func (s *Server) ExtendLeader(ctx context.Context, key, token, value string, ttl time.Duration) (bool, error) {
	return s.locked(ctx, checkLeader(key, token, value, ttl), func() (bool, error) {
		return s.setLeaderLocked(key, token, value, ttl), nil
	})
}

func checkLeader(key, token, value string, ttl time.Duration) error {
	if err := keyserver.CheckTTL(key, token, ttl); err != nil {
		return err
	}
	return keyserver.CheckToken(key, value) // an empty value is refused as an empty token is
}

// setLeaderLocked stores token and value as key's leader unless another
// token leads, and wakes key's watches when that changed the leader or
// its value. s.mu must be held.
func (s *Server) setLeaderLocked(key, token, value string, ttl time.Duration) bool {
	l := s.leaderLocked(key)
	if l.token != "" && l.token != token {
		return false
	}
	if s.prims.leaders == nil {
		s.prims.leaders = make(map[string]leader)
	}
	s.prims.leaders[key] = leader{entry: entry{token: token, expires: s.now().Add(ttl.Truncate(time.Millisecond))}, value: value}
	if l.token != token || l.value != value {
		s.wakeLocked(leaderKind + key)
	}
	return true
}

// ReleaseLeader frees key if token leads, and wakes key's watches.
func (s *Server) ReleaseLeader(ctx context.Context, key, token string) (bool, error) {
	return s.locked(ctx, keyserver.CheckToken(key, token), func() (bool, error) {
		if s.leaderLocked(key).token != token {
			return false, nil
		}
		delete(s.prims.leaders, key)
		s.wakeLocked(leaderKind + key)
		return true, nil
	})
}

// ReadLeader returns key's leader, with the TTL its key has left.
func (s *Server) ReadLeader(ctx context.Context, key string) (keyserver.Leadership, error) {
	var ld keyserver.Leadership
	_, err := s.locked(ctx, keyserver.CheckKey(key), func() (bool, error) {
		if l := s.leaderLocked(key); l.token != "" {
			ld = keyserver.Leadership{Token: l.token, Value: l.value, Left: l.expires.Sub(s.now())}
		}
		return true, nil
	})
	return ld, err
}

// WatchLeader watches key for a change of its leader.
func (s *Server) WatchLeader(ctx context.Context, key string) (<-chan struct{}, func(), error) {
	return s.watch(ctx, leaderKind, key)
}

// watch starts a watch of key of kind, woken by wakeLocked and by Close.
func (s *Server) watch(ctx context.Context, kind, key string) (<-chan struct{}, func(), error) {
	w := &keyWatch{ch: make(chan struct{})}
	wk := kind + key
	_, err := s.locked(ctx, keyserver.CheckKey(key), func() (bool, error) {
		if s.prims.watches == nil {
			s.prims.watches = make(map[string]map[*keyWatch]struct{})
		}
		ws := s.prims.watches[wk]
		if ws == nil {
			ws = make(map[*keyWatch]struct{})
			s.prims.watches[wk] = ws
		}
		ws[w] = struct{}{}
		return true, nil
	})
	if err != nil {
		return nil, nil, err
	}
	return w.ch, unwatch(&s.mu, s.prims.watches, wk, w), nil
}

// wakeLocked closes the channels of the watches of wk and forgets them.
// s.mu must be held.
func (s *Server) wakeLocked(wk string) {
	for w := range s.prims.watches[wk] {
		w.fire()
	}
	delete(s.prims.watches, wk)
}

// fire closes w's channel once. s.mu must be held.
func (w *keyWatch) fire() {
	if !w.fired {
		w.fired = true
		close(w.ch)
	}
}

// closePrims wakes every watch of the primitives and drops their state,
// for Close. s.mu must be held.
func (s *Server) closePrims() {
	for _, ws := range s.prims.watches {
		for w := range ws {
			w.fire()
		}
	}
	s.prims = prims{}
}
