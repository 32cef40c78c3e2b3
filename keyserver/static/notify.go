package static

import (
	"context"
	"sync"
	"time"

	"github.com/goredlock/goredlock/keyserver"
)

// watch is one WatchTurn until it is stopped: fired once its channel is
// closed, by the store's turn, Wake or Break.
type watch struct {
	turn  chan struct{}
	once  sync.Once
	stop  chan struct{} // closed by the watch's stop
	fired bool          // under Server.mu
}

// fire closes w's channel once.
func (w *watch) fire() { w.once.Do(func() { close(w.turn) }) }

// AcquireOrHolder answers as Acquire does, with OpAcquire's script, and
// reports the reply's Left and Rank with a refusal, or else asks the store.
func (s *Server) AcquireOrHolder(ctx context.Context, key, token string, ttl time.Duration) (bool, keyserver.Holder, error) {
	return s.acquireHolder(ctx, Call{Op: OpAcquire, Key: key, Token: token, TTL: ttl}, s.store.AcquireOrHolder)
}

// AcquireInLine answers as AcquireOrHolder does, from OpAcquire's script;
// when it answers from the store, the store's line is joined or left as a
// Notifier's is. A scripted reply leaves the line alone.
func (s *Server) AcquireInLine(ctx context.Context, key, token string, ttl time.Duration, next string) (bool, keyserver.Holder, error) {
	return s.acquireHolder(ctx, Call{Op: OpAcquire, Key: key, Token: token, TTL: ttl}, func(ctx context.Context, key, token string, ttl time.Duration) (bool, keyserver.Holder, error) {
		return s.store.AcquireInLine(ctx, key, token, ttl, next)
	})
}

// acquireHolder is AcquireOrHolder or AcquireInLine of c, answered by
// store unless scripted.
func (s *Server) acquireHolder(ctx context.Context, c Call,
	store func(context.Context, string, string, time.Duration) (bool, keyserver.Holder, error)) (bool, keyserver.Holder, error) {
	var h keyserver.Holder
	r, ok, err := s.call(ctx, c, func(ctx context.Context, key, token string, ttl time.Duration) (bool, error) {
		ok, sh, err := store(ctx, key, token, ttl)
		h = sh
		return ok, err
	})
	if !r.Store {
		h = keyserver.Holder{}
		if !ok && err == nil {
			h = keyserver.Holder{Left: r.Left, Rank: r.Rank, Ahead: r.Ahead}
		}
	}
	return ok, h, err
}

// WatchTurn answers from OpWatch's script: a reply's Err fails the call,
// and its Delay and Block hold it up; otherwise the watch starts on the
// store's line. Its channel is closed by the store's turn (a Release that
// the store answered promised key to the waiter), by a scripted Release of
// key that answers true, by Wake(key) or by Break.
func (s *Server) WatchTurn(ctx context.Context, key, token string) (<-chan struct{}, func(), error) {
	_, _, err := s.call(ctx, Call{Op: OpWatch, Key: key, Token: token}, func(ctx context.Context, _, _ string, _ time.Duration) (bool, error) {
		return true, ctx.Err()
	})
	if err != nil {
		return nil, nil, err
	}
	turn, stopStore, err := s.store.WatchTurn(ctx, key, token)
	if err != nil {
		return nil, nil, err
	}
	w := &watch{turn: make(chan struct{}), stop: make(chan struct{})}
	s.mu.Lock()
	ws := s.watches[key]
	if ws == nil {
		ws = make(map[*watch]struct{})
		s.watches[key] = ws
	}
	ws[w] = struct{}{}
	s.mu.Unlock()
	forwarded := make(chan struct{})
	go func() { // ended and waited for by stop
		defer close(forwarded)
		select {
		case <-turn:
			s.mu.Lock()
			w.fired = true
			s.mu.Unlock()
			w.fire()
		case <-w.stop:
		}
	}()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			close(w.stop)
			<-forwarded
			stopStore()
			s.mu.Lock()
			defer s.mu.Unlock()
			delete(ws, w)
			if len(ws) == 0 { // ws is still s.watches[key]: it held w until now
				delete(s.watches, key)
			}
		})
	}
	return w.turn, stop, nil
}

// LeaveLine answers from OpLeaveLine's script (only a reply's Err, Delay
// and Block count), or else leaves the store's line.
func (s *Server) LeaveLine(ctx context.Context, key, token string) error {
	_, _, err := s.call(ctx, Call{Op: OpLeaveLine, Key: key, Token: token}, func(ctx context.Context, key, token string, _ time.Duration) (bool, error) {
		return true, s.store.LeaveLine(ctx, key, token)
	})
	return err
}

// ReleaseInLine answers as Release does, from OpRelease's script; when it
// answers from the store, the waiter takes its place in the store's line
// again first, as a Notifier's does.
func (s *Server) ReleaseInLine(ctx context.Context, key, token string) (bool, error) {
	return s.release(ctx, key, token, s.store.ReleaseInLine)
}

// WatchContention answers from OpWatchContention's script: a reply's Err
// fails the call, and its Delay and Block hold it up; otherwise it is the
// store's watch of key's line, told of the waiters the store put in line.
func (s *Server) WatchContention(ctx context.Context, key, token string) (contended, broken <-chan struct{}, stop func(), err error) {
	_, _, err = s.call(ctx, Call{Op: OpWatchContention, Key: key, Token: token}, func(ctx context.Context, _, _ string, _ time.Duration) (bool, error) {
		return true, ctx.Err()
	})
	if err != nil {
		return nil, nil, nil, err
	}
	return s.store.WatchContention(ctx, key, token)
}

// Wake closes the channels of key's watches, as a turn that a release
// published would, and returns how many it woke.
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
			w.fire()
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
