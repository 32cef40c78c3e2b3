package static

import (
	"context"
	"time"

	"github.com/goredlock/goredlock/keyserver"
)

// watch is one Watch until it is stopped: fired once its channel is
// closed.
type watch struct {
	released chan struct{}
	fired    bool
}

// AcquireOrHolder answers as Acquire does, with OpAcquire's script, and
// reports the reply's Left and Rank with a refusal, or else asks the store.
func (s *Server) AcquireOrHolder(ctx context.Context, key, token string, ttl time.Duration) (bool, keyserver.Holder, error) {
	var h keyserver.Holder
	r, ok, err := s.call(ctx, Call{Op: OpAcquire, Key: key, Token: token, TTL: ttl}, func(ctx context.Context, key, token string, ttl time.Duration) (bool, error) {
		ok, sh, err := s.store.AcquireOrHolder(ctx, key, token, ttl)
		h = sh
		return ok, err
	})
	if !r.Store {
		h = keyserver.Holder{}
		if !ok && err == nil {
			h = keyserver.Holder{Left: r.Left, Rank: r.Rank}
		}
	}
	return ok, h, err
}

// Watch answers from OpWatch's script: a reply's Err fails the call, and
// its Delay and Block hold it up; otherwise the watch starts. Its channel
// is closed by a Release of key that answers true, by Wake(key) or by
// Break.
func (s *Server) Watch(ctx context.Context, key string) (<-chan struct{}, func(), error) {
	_, _, err := s.call(ctx, Call{Op: OpWatch, Key: key, Token: "-"}, func(ctx context.Context, _, _ string, _ time.Duration) (bool, error) {
		return true, ctx.Err()
	})
	if err != nil {
		return nil, nil, err
	}
	w := &watch{released: make(chan struct{})}
	s.mu.Lock()
	ws := s.watches[key]
	if ws == nil {
		ws = make(map[*watch]struct{})
		s.watches[key] = ws
	}
	ws[w] = struct{}{}
	s.mu.Unlock()
	stopped := false
	stop := func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if stopped {
			return
		}
		stopped = true
		delete(ws, w)
		if len(ws) == 0 { // ws is still s.watches[key]: it held w until now
			delete(s.watches, key)
		}
	}
	return w.released, stop, nil
}

// Wake closes the channels of key's watches, as a release published by
// another client would, and returns how many it woke.
func (s *Server) Wake(key string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.wakeLocked(key)
}

// Break closes the channels of every watch, as a lost connection to a
// Redis server would, and returns how many it woke.
func (s *Server) Break() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for key := range s.watches {
		n += s.wakeLocked(key)
	}
	return n
}

func (s *Server) wakeLocked(key string) int {
	n := 0
	for w := range s.watches[key] {
		if !w.fired {
			w.fired = true
			close(w.released)
			n++
		}
	}
	return n
}

// Watching returns how many watches of key have started and not been
// stopped (woken or not), so that a test can check that its code stops
// every watch it starts.
func (s *Server) Watching(key string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.watches[key])
}
