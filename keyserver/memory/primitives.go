package memory

import (
	"context"
	"time"

	"github.com/goredlock/goredlock/internal/check"
	"github.com/goredlock/goredlock/internal/layout"
	"github.com/goredlock/goredlock/keyserver"
)

var _ keyserver.HoldKeeper = (*Server)(nil)

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

// AcquireHold takes h if it is free or its token's: a slot after checking
// its count against the stored one, a read or write hold, a leadership
// with the election's fence counter.
func (s *Server) AcquireHold(ctx context.Context, h keyserver.HoldSpec, ttl time.Duration) (bool, keyserver.HoldReply, error) {
	var hd keyserver.HoldReply
	ok, err := s.locked(ctx, check.HoldTTL(h, ttl), func() (bool, error) {
		switch h.Kind {
		case keyserver.PermitHold:
			return s.acquirePermitLocked(h, ttl, &hd)
		case keyserver.ReadHold:
			return s.acquireReadLocked(h.Key, h.Token, ttl, &hd), nil
		case keyserver.LeaderHold:
			hd.Fence = s.fences[h.Key]
			return s.setLeaderLocked(h.Key, h.Token, h.Value, ttl), nil
		}
		return s.acquireWriteLocked(h.Key, h.Token, ttl, h.Kind == keyserver.WaitingWriteHold, &hd), nil
	})
	return ok, hd, err
}

// ExtendHold renews h if it holds its token, or stores it again where it
// would be granted.
func (s *Server) ExtendHold(ctx context.Context, h keyserver.HoldSpec, ttl time.Duration) (bool, error) {
	return s.locked(ctx, check.HoldTTL(h, ttl), func() (bool, error) {
		switch h.Kind {
		case keyserver.PermitHold:
			return s.extendPermitLocked(h.Key, h.Slot, h.Token, ttl), nil
		case keyserver.LeaderHold:
			return s.setLeaderLocked(h.Key, h.Token, h.Value, ttl), nil
		}
		return s.extendRWLocked(h.Key, h.Token, ttl, h.Kind != keyserver.ReadHold), nil
	})
}

// ReleaseHold ends h if it holds its token, and wakes the watches of its
// key.
func (s *Server) ReleaseHold(ctx context.Context, h keyserver.HoldSpec) (bool, error) {
	return s.locked(ctx, check.Hold(h), func() (bool, error) {
		switch h.Kind {
		case keyserver.PermitHold:
			return s.releasePermitLocked(h.Key, h.Slot, h.Token), nil
		case keyserver.LeaderHold:
			return s.resignLocked(h.Key, h.Token), nil
		}
		return s.releaseRWLocked(h.Key, h.Token, h.Kind != keyserver.ReadHold), nil
	})
}

// WatchHolds watches h's key for the release of a slot or hold, or a
// change of its leader. Every watcher is woken: in one process the herd
// is cheap.
func (s *Server) WatchHolds(ctx context.Context, h keyserver.HoldSpec) (<-chan struct{}, func(), error) {
	if h.Kind == keyserver.LeaderHold {
		return s.watch(ctx, leaderKind, h.Key)
	}
	if err := check.Hold(h); err != nil {
		return nil, nil, err
	}
	if h.Kind == keyserver.PermitHold {
		return s.watch(ctx, semKind, h.Key)
	}
	return s.watch(ctx, rwKind, h.Key)
}

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

// acquirePermitLocked takes h's slot if it is free or its token's, after
// checking its count against the stored one, and describes the semaphore
// in p. s.mu must be held.
func (s *Server) acquirePermitLocked(h keyserver.HoldSpec, ttl time.Duration, p *keyserver.HoldReply) (bool, error) {
	m := s.semLocked(h.Key)
	if m == nil {
		m = &semaphore{permits: h.Permits, slots: make(map[int]entry)}
	} else if m.permits != h.Permits {
		return false, check.PermitsDiffer(h.Key, h.Permits, m.permits)
	}
	ok := true
	if e, held := m.slots[h.Slot]; held && e.token != h.Token {
		ok = false
	} else {
		s.setSlotLocked(h.Key, m, h.Slot, h.Token, ttl)
	}
	m.describe(s.now(), p)
	return ok, nil
}

// describe lists m's free slots (at most layout.MaxFreeHint) and the
// shortest TTL left of its held ones in p.
func (m *semaphore) describe(now time.Time, p *keyserver.HoldReply) {
	for i := 0; i < m.permits && len(p.Free) < layout.MaxFreeHint; i++ {
		if _, held := m.slots[i]; !held {
			p.Free = append(p.Free, i)
		}
	}
	for _, e := range m.slots {
		if l := e.expires.Sub(now); p.Left == 0 || l < p.Left {
			p.Left = l
		}
	}
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

// extendPermitLocked renews slot if it holds token, or stores it again if
// it is free. s.mu must be held.
func (s *Server) extendPermitLocked(key string, slot int, token string, ttl time.Duration) bool {
	m := s.semLocked(key)
	if m == nil {
		m = &semaphore{permits: slot + 1, slots: make(map[int]entry)}
	}
	if e, held := m.slots[slot]; held && e.token != token {
		return false
	}
	s.setSlotLocked(key, m, slot, token, ttl)
	return true
}

// releasePermitLocked frees slot if it holds token, and wakes the
// semaphore's watches. s.mu must be held.
func (s *Server) releasePermitLocked(key string, slot int, token string) bool {
	m := s.semLocked(key)
	if m == nil {
		return false
	}
	if e, held := m.slots[slot]; !held || e.token != token {
		return false
	}
	delete(m.slots, slot)
	if len(m.slots) == 0 {
		delete(s.prims.sems, key)
	}
	s.wakeLocked(semKind + key)
	return true
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

// acquireReadLocked adds token to key's readers unless a writer holds the
// key or waits for it; refused, hd tells for how long. s.mu must be held.
func (s *Server) acquireReadLocked(key, token string, ttl time.Duration, hd *keyserver.HoldReply) bool {
	h := s.rwMake(key)
	now := s.now()
	if _, reading := h.readers[token]; !reading {
		if left, blocked := h.blocksReaders(now); blocked {
			hd.Left = left
			return false
		}
	}
	h.readers[token] = now.Add(ttl.Truncate(time.Millisecond))
	return true
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

// acquireWriteLocked stores token as key's writer if nobody holds the
// key; a refused caller that will wait marks a writer waiting, and hd
// tells how long the soonest hold has left. s.mu must be held.
func (s *Server) acquireWriteLocked(key, token string, ttl time.Duration, wait bool, hd *keyserver.HoldReply) bool {
	h := s.rwMake(key)
	now := s.now()
	w := layout.WaiterOf(token)
	if (h.writer.token != "" && h.writer.token != token) || len(h.readers) > 0 {
		hd.Left = h.soonest(now)
		if wait {
			h.waiting[w] = now.Add(keyserver.WriterWaitTTL)
		}
		return false
	}
	delete(h.waiting, w)
	h.writer = entry{token: token, expires: now.Add(ttl.Truncate(time.Millisecond))}
	return true
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

// extendRWLocked renews token's hold of key, a write hold if write, or
// stores it again where it would be granted. s.mu must be held.
func (s *Server) extendRWLocked(key, token string, ttl time.Duration, write bool) bool {
	h := s.rwMake(key)
	expires := s.now().Add(ttl.Truncate(time.Millisecond))
	if write {
		if (h.writer.token != "" && h.writer.token != token) || len(h.readers) > 0 {
			return false
		}
		h.writer = entry{token: token, expires: expires}
		return true
	}
	if _, reading := h.readers[token]; !reading && h.writer.token != "" {
		return false
	}
	h.readers[token] = expires
	return true
}

// releaseRWLocked ends token's hold of key, a write hold if write, and
// wakes key's watches. s.mu must be held.
func (s *Server) releaseRWLocked(key, token string, write bool) bool {
	h := s.rwLocked(key)
	if h == nil {
		return false
	}
	switch _, reading := h.readers[token]; {
	case write && h.writer.token == token:
		h.writer = entry{}
	case !write && reading:
		delete(h.readers, token)
	default:
		return false
	}
	s.rwLocked(key) // drops it when empty
	s.wakeLocked(rwKind + key)
	return true
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

// resignLocked frees key if token leads, and wakes key's watches. s.mu
// must be held.
func (s *Server) resignLocked(key, token string) bool {
	if s.leaderLocked(key).token != token {
		return false
	}
	delete(s.prims.leaders, key)
	s.wakeLocked(leaderKind + key)
	return true
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
