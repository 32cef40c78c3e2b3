package memory

import (
	"context"
	"sync"

	"github.com/goredlock/goredlock/keyserver"
)

// contentionWatch is one WatchContention until it is stopped.
type contentionWatch struct {
	contended, broken chan struct{}
	done              bool // one of them is closed
}

// WatchContention watches key's line for its holder: contended is closed
// when a waiter joins it, at once if one is in line; broken when the
// Server is closed.
func (s *Server) WatchContention(ctx context.Context, key, token string) (contended, broken <-chan struct{}, stop func(), err error) {
	w := &contentionWatch{contended: make(chan struct{}), broken: make(chan struct{})}
	_, err = s.locked(ctx, keyserver.CheckToken(key, token), func() (bool, error) {
		if s.contention == nil {
			s.contention = make(map[string]map[*contentionWatch]struct{})
		}
		ws := s.contention[key]
		if ws == nil {
			ws = make(map[*contentionWatch]struct{})
			s.contention[key] = ws
		}
		ws[w] = struct{}{}
		if s.lineLocked(key) != nil {
			w.end(w.contended)
		}
		return true, nil
	})
	if err != nil {
		return nil, nil, nil, err
	}
	var once sync.Once
	stop = func() {
		once.Do(func() {
			s.mu.Lock()
			defer s.mu.Unlock()
			if ws := s.contention[key]; ws != nil {
				delete(ws, w)
				if len(ws) == 0 {
					delete(s.contention, key)
				}
			}
		})
	}
	return w.contended, w.broken, stop, nil
}

// end closes ch, one of w's channels, unless one already is. s.mu must be
// held.
func (w *contentionWatch) end(ch chan struct{}) {
	if !w.done {
		w.done = true
		close(ch)
	}
}

// contendedLocked tells the watches of key that a waiter joined its line.
// s.mu must be held.
func (s *Server) contendedLocked(key string) {
	for w := range s.contention[key] {
		w.end(w.contended)
	}
}

// breakContentionLocked ends every watch as broken (Close). s.mu must be
// held.
func (s *Server) breakContentionLocked() {
	for _, ws := range s.contention {
		for w := range ws {
			w.end(w.broken)
		}
	}
}
