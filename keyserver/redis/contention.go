package redis

import (
	"context"
	"strings"
	"sync"

	"github.com/goredlock/goredlock/internal/layout"
	"github.com/goredlock/goredlock/keyserver"
)

// Contention (keyserver.Notifier's WatchContention): a waiter that forms a line
// publishes once on the key's channel (see "Contention" in docs/design.md).

// contentionPrefix begins every key's contention channel; the key follows.
const contentionPrefix = "goredlock:contended:"

// contentionSub is the subscription of one key's contention channel on
// one connection, and the holders' watches on it.
type contentionSub struct {
	key     string
	cn      *subConn
	ready   chan struct{} // closed once Redis confirmed the SUBSCRIBE, or cn died
	live    bool
	watches map[*contentionWatch]struct{}
}

// contentionWatch is one WatchContention, from its start to its stop.
type contentionWatch struct {
	sub               *contentionSub
	contended, broken chan struct{}
	done              bool // one of them is closed
}

// endLocked closes ch, one of w's channels, unless one already is.
func (w *contentionWatch) endLocked(ch chan struct{}) {
	if !w.done {
		w.done = true
		close(ch)
	}
}

// WatchContention watches key's line for its holder: contended is closed
// when a waiter joins it, or at once when the line holds one once the
// Server has subscribed; broken when the subscriber connection broke. It
// costs a SUBSCRIBE (once per key), an EXISTS and, at the last stop, an
// UNSUBSCRIBE.
func (s *Server) WatchContention(ctx context.Context, key, token string) (contended, broken <-chan struct{}, stop func(), err error) {
	if err := keyserver.CheckToken(key, token); err != nil {
		return nil, nil, nil, err
	}
	if err := s.enter(ctx, "watch contention", key); err != nil {
		return nil, nil, nil, err
	}
	defer s.inflight.Done()
	w, err := s.sub.watchContention(ctx, key)
	if err != nil {
		return nil, nil, nil, s.fail("watch contention", key, err)
	}
	var once sync.Once
	stop = func() { once.Do(func() { s.sub.stopContention(w) }) }
	n, err := s.t.Do(ctx, []string{"EXISTS"}, []string{layout.LineKey(key)})
	if err != nil {
		stop()
		return nil, nil, nil, s.fail("watch contention", key, err)
	}
	if n == int64(1) {
		s.sub.mu.Lock()
		w.endLocked(w.contended)
		s.sub.mu.Unlock()
	}
	return w.contended, w.broken, stop, nil
}

// watchContention starts a watch of key's contention channel and returns
// once the subscription is confirmed. A connection that broke first is
// tried once more.
func (s *subscriber) watchContention(ctx context.Context, key string) (*contentionWatch, error) {
	channel := contentionPrefix + key
	for retried := false; ; retried = true {
		cn, err := s.conn(ctx)
		if err != nil {
			return nil, err
		}
		s.mu.Lock()
		if cn.dead {
			s.mu.Unlock()
			if retried || ctx.Err() != nil || s.s.permanent(cn.reason) {
				return nil, cn.reason
			}
			continue
		}
		if s.contention == nil {
			s.contention = make(map[string]*contentionSub)
			s.subscribing = make(map[string][]*contentionSub)
		}
		cs := s.contention[key]
		subscribe := cs == nil || cs.cn != cn
		if subscribe {
			cs = &contentionSub{key: key, cn: cn, ready: make(chan struct{}), watches: make(map[*contentionWatch]struct{})}
			s.contention[key] = cs
			s.subscribing[channel] = append(s.subscribing[channel], cs)
		}
		w := &contentionWatch{sub: cs, contended: make(chan struct{}), broken: make(chan struct{})}
		cs.watches[w] = struct{}{}
		s.mu.Unlock()
		if subscribe {
			if err := cn.ps.Subscribe(ctx, channel); err != nil {
				cn.Broken(err)
			}
		}
		select {
		case <-cs.ready:
		case <-ctx.Done():
			s.stopContention(w)
			return nil, ctx.Err()
		}
		s.mu.Lock()
		live := cs.live && !cn.dead
		s.mu.Unlock()
		if live {
			return w, nil
		}
		s.stopContention(w)
		if retried || ctx.Err() != nil || s.s.permanent(cn.reason) {
			return nil, cn.reason
		}
	}
}

// stopContention ends w; the last watch of its key unsubscribes.
func (s *subscriber) stopContention(w *contentionWatch) {
	s.mu.Lock()
	cs := w.sub
	delete(cs.watches, w)
	unsubscribe := len(cs.watches) == 0 && s.contention[cs.key] == cs
	if unsubscribe {
		delete(s.contention, cs.key)
		unsubscribe = !cs.cn.dead
	}
	s.mu.Unlock()
	if unsubscribe {
		// Redis answers in order: a SUBSCRIBE sent after this one by a
		// new watch of the key takes effect after it.
		cs.cn.ps.Unsubscribe(context.Background(), contentionPrefix+cs.key) //nolint:errcheck // a broken connection ends the subscription anyway
	}
}

// contentionMessage handles a message on a contention channel, and
// reports whether it was one.
func (cn *subConn) contentionMessage(channel string) bool {
	key, ok := strings.CutPrefix(channel, contentionPrefix)
	if !ok {
		return false
	}
	s := cn.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if cs := s.contention[key]; cs != nil && cs.cn == cn {
		for w := range cs.watches {
			w.endLocked(w.contended)
		}
	}
	return true
}

// contentionSubscribed handles the confirmation of a contention channel's
// SUBSCRIBE, and reports whether it was one: it confirms the earliest
// subscription of the channel still waiting.
func (cn *subConn) contentionSubscribed(channel string) bool {
	if !strings.HasPrefix(channel, contentionPrefix) {
		return false
	}
	s := cn.s
	s.mu.Lock()
	defer s.mu.Unlock()
	waiting := s.subscribing[channel]
	for i, cs := range waiting {
		if cs.cn != cn {
			continue
		}
		s.subscribing[channel] = append(waiting[:i:i], waiting[i+1:]...)
		if len(s.subscribing[channel]) == 0 {
			delete(s.subscribing, channel)
		}
		if !cs.live && !cn.dead {
			cs.live = true
			close(cs.ready)
		}
		break
	}
	return true
}

// breakContentionLocked ends the contention watches on cn, which died, as
// broken. s.mu must be held.
func (s *subscriber) breakContentionLocked(cn *subConn) {
	for key, cs := range s.contention {
		if cs.cn != cn {
			continue
		}
		delete(s.contention, key)
		if !cs.live {
			close(cs.ready)
		}
		for w := range cs.watches {
			w.endLocked(w.broken)
		}
	}
	for channel, waiting := range s.subscribing {
		kept := waiting[:0]
		for _, cs := range waiting {
			if cs.cn != cn {
				kept = append(kept, cs)
			}
		}
		if len(kept) == 0 {
			delete(s.subscribing, channel)
		} else {
			s.subscribing[channel] = kept
		}
	}
}
