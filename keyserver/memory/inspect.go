package memory

import (
	"cmp"
	"context"
	"slices"
	"time"

	"github.com/goredlock/goredlock/keyserver"
)

var _ keyserver.Inspector = (*Server)(nil)

// Inspect reads what the server holds under keys, under its mutex: one
// moment of the map.
func (s *Server) Inspect(ctx context.Context, keys keyserver.NameKeys) (keyserver.NameStatus, error) {
	var st keyserver.NameStatus
	_, err := s.locked(ctx, checkNameKeys(keys), func() (bool, error) {
		st = s.inspectLocked(keys)
		return true, nil
	})
	return st, err
}

// checkNameKeys refuses an empty key, as every call does.
func checkNameKeys(keys keyserver.NameKeys) error {
	for _, k := range []string{keys.Lock, keys.Semaphore, keys.RW, keys.Election} {
		if err := keyserver.CheckKey(k); err != nil {
			return err
		}
	}
	return nil
}

// inspectLocked is Inspect. s.mu must be held.
func (s *Server) inspectLocked(keys keyserver.NameKeys) keyserver.NameStatus {
	now := s.now()
	var st keyserver.NameStatus
	if e, ok := s.keys[keys.Lock]; ok && now.Before(e.expires) {
		st.Lock = keyserver.Hold{Token: e.token, Left: left(e.expires, now)}
	}
	if q := s.lineLocked(keys.Lock); q != nil {
		st.Waiters = len(q.waiters)
	}
	st.Fence = s.fences[keys.Lock]

	if m := s.semLocked(keys.Semaphore); m != nil {
		st.Permits = m.permits
		slots := sortedKeys(m.slots)
		st.SlotsHeld = len(slots)
		for _, i := range slots[:min(len(slots), keyserver.MaxInspected)] {
			e := m.slots[i]
			st.Slots = append(st.Slots, keyserver.Hold{Token: e.token, Left: left(e.expires, now)})
		}
	}
	st.PermitWaiters = len(s.prims.watches[semKind+keys.Semaphore])

	if h := s.rwLocked(keys.RW); h != nil {
		if h.writer.token != "" {
			st.Writer = keyserver.Hold{Token: h.writer.token, Left: left(h.writer.expires, now)}
		}
		readers := sortedKeys(h.readers)
		st.ReadersHeld = len(readers)
		for _, t := range readers[:min(len(readers), keyserver.MaxInspected)] {
			st.Readers = append(st.Readers, keyserver.Hold{Token: t, Left: left(h.readers[t], now)})
		}
		st.WriterWaiting = len(h.waiting) > 0
	}
	st.RWWaiters = len(s.prims.watches[rwKind+keys.RW])

	if l := s.leaderLocked(keys.Election); l.token != "" {
		st.Leader = keyserver.Leadership{Token: l.token, Value: l.value, Left: left(l.expires, now)}
	}
	st.Term = s.fences[keys.Election]
	return st
}

// left is the TTL an entry expiring at expires has left at now: at least
// a millisecond, as a Redis server reports it.
func left(expires, now time.Time) time.Duration {
	return max(expires.Sub(now), time.Millisecond)
}

// sortedKeys returns m's keys in order, as Inspect lists holds lowest
// first.
func sortedKeys[K cmp.Ordered, V any](m map[K]V) []K {
	ks := make([]K, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}
