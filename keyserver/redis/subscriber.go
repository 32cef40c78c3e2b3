package redis

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/goredlock/goredlock/keyserver"
)

// The subscriber is what WatchTurn runs on: one Pub/Sub connection per
// Server, shared by every waiter of the process, whatever the transport.
// A line's channel is subscribed when its first waiter comes, at the cost
// of one round trip, and kept for a while (linger) after its last waiter
// stopped, so that a key that is contended does not pay a SUBSCRIBE and an
// UNSUBSCRIBE per wait; later waiters share the subscription at no cost.
// Waiters cost a channel and a map entry each, and no goroutine: the
// transport's reader hands each message to the handler, which closes the
// turn of the waiter the key was promised to and tells the others that
// the line moved.
//
// Nothing survives a broken connection: every waiter is woken, and tries
// again; the next WatchTurn opens a new connection and subscribes anew. A
// Redis that restarted may have lost the line, and a turn published while
// no connection was open reached nobody, so a waiter must look at the key
// again anyway.

const (
	// linger is how long a line's channel stays subscribed after its last
	// waiter stopped watching. Idle channels are unsubscribed by a later
	// WatchTurn, or by Close.
	linger = 2 * time.Second
	// subscribeOverdue is how long a (UN)SUBSCRIBE may go unconfirmed
	// before a WatchTurn takes the connection for dead and replaces it (a
	// black-holed link, a server paused for seconds).
	subscribeOverdue = 5 * time.Second
)

// subscriber is the Pub/Sub side of a Server.
type subscriber struct {
	s       *Server
	overdue time.Duration
	linger  time.Duration

	mu      sync.Mutex
	cn      *subConn      // the open connection, nil when none
	dialing chan struct{} // closed when the dial in progress ends; nil when none
	closed  bool
	idle    []idleTopic // topics whose last waiter stopped, oldest first
	broken  []PubSub    // connections that broke, to close (see Broken)
	dials   int         // connections opened, for tests
}

// subConn is one subscriber connection. Its fields are guarded by the
// subscriber's mu, which is never held across I/O.
type subConn struct {
	s       *subscriber
	ps      PubSub
	topics  map[string]*topic   // by channel: subscribed, or being subscribed
	pending map[string][]*topic // by channel, (UN)SUBSCRIBEs sent and not confirmed: the topic, or nil for UNSUBSCRIBE
	sent    []time.Time         // when each unconfirmed request was queued, oldest first
	outbox  []request           // queued, not yet written
	writing bool                // a caller is writing the outbox (see write)
	dead    bool
	reason  error // why it died
}

// request is one (UN)SUBSCRIBE to write.
type request struct {
	channel   string
	subscribe bool
}

// topic is one line's channel and its waiters. A channel that is
// unsubscribed and subscribed again gets a new topic, so that waiters of
// the new subscription wait for its own confirmation.
type topic struct {
	channel string
	watches map[*turnWatch]struct{}
	ready   chan struct{} // closed once Redis confirmed the SUBSCRIBE, or it failed
	settled bool          // ready is closed
	err     error         // why it failed; set before ready is closed
	live    bool          // confirmed: messages are delivered to the waiters
	idle    time.Time     // when its last waiter stopped; zero while watched
}

// idleTopic is an entry of the subscriber's idle queue; it is stale when
// the topic was watched again since (its idle time changed).
type idleTopic struct {
	t  *topic
	cn *subConn
	at time.Time
}

// turnWatch is one WatchTurn, from its start to its stop.
type turnWatch struct {
	t       *topic
	cn      *subConn
	promise string // the waiter's; "" for a token without a rank
	turn    chan struct{}
	moved   func()
	fired   bool // turn is closed
	stopped bool
}

func newSubscriber(s *Server) *subscriber {
	return &subscriber{s: s, overdue: subscribeOverdue, linger: linger}
}

// lineChannel is the Pub/Sub channel of key's line: named as the line
// key, in key's Cluster slot (which PUBLISH does not need, but SPUBLISH
// would).
func lineChannel(key string) string { return keyserver.LineKey(key) }

// contended reports whether a waiter of this process watches key's line,
// or did a moment ago (its channel is still subscribed): the key is then
// most likely held, and a plain SET NX would only be refused.
func (s *subscriber) contended(key string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cn == nil {
		return false
	}
	t := s.cn.topics[lineChannel(key)]
	return t != nil && t.live
}

// watch starts watching key's line for promise. It returns once Redis has
// confirmed the subscription to the line's channel, at once when another
// waiter's confirmation covers it. A watch whose connection broke before
// the confirmation is tried once more on a new connection.
func (s *subscriber) watch(ctx context.Context, key, promise string, moved func()) (*turnWatch, error) {
	channel := lineChannel(key)
	for retried := false; ; retried = true {
		cn, err := s.conn(ctx)
		if err != nil {
			return nil, err
		}
		now := time.Now()
		s.mu.Lock()
		if cn.dead {
			s.mu.Unlock()
			continue
		}
		if len(cn.sent) > 0 && now.Sub(cn.sent[0]) > s.overdue {
			reason := fmt.Errorf("%w: a subscription unconfirmed for %v, so the subscriber connection was closed", ErrConnectionLost, s.overdue)
			s.endLocked(cn, reason)
			s.mu.Unlock()
			cn.ps.Close() //nolint:errcheck // given up on
			continue
		}
		writer := s.sweepLocked(now)
		t := cn.topics[channel]
		if t == nil {
			t = &topic{channel: channel, watches: make(map[*turnWatch]struct{}), ready: make(chan struct{})}
			cn.topics[channel] = t
			writer = cn.queueLocked(request{channel, true}, t, now) || writer
		}
		t.idle = time.Time{}
		w := &turnWatch{t: t, cn: cn, promise: promise, turn: make(chan struct{}), moved: moved}
		t.watches[w] = struct{}{}
		s.mu.Unlock()
		if writer {
			s.write(cn)
		}

		select {
		case <-t.ready:
		case <-ctx.Done():
			s.stop(w)
			return nil, ctx.Err()
		}
		if t.err == nil { // set before ready was closed
			return w, nil
		}
		s.stop(w)
		if retried || ctx.Err() != nil || s.s.permanent(t.err) {
			return nil, t.err
		}
	}
}

// fire closes w's turn, once.
func (s *subscriber) fire(w *turnWatch) {
	s.mu.Lock()
	defer s.mu.Unlock()
	w.fireLocked()
}

func (w *turnWatch) fireLocked() {
	if !w.fired {
		w.fired = true
		close(w.turn)
	}
}

// stop ends w. A topic left without waiters lingers (see linger).
func (s *subscriber) stop(w *turnWatch) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if w.stopped {
		return
	}
	w.stopped = true
	t := w.t
	delete(t.watches, w)
	if len(t.watches) == 0 && !w.cn.dead && w.cn.topics[t.channel] == t {
		t.idle = time.Now()
		s.idle = append(s.idle, idleTopic{t, w.cn, t.idle})
	}
}

// sweepLocked unsubscribes the topics idle for longer than linger, and
// reports whether the caller must write (see queueLocked). s.mu must be
// held.
func (s *subscriber) sweepLocked(now time.Time) bool {
	writer := false
	for len(s.idle) > 0 {
		e := s.idle[0]
		if e.t.idle.Equal(e.at) && now.Sub(e.at) < s.linger {
			break
		}
		s.idle[0] = idleTopic{}
		s.idle = s.idle[1:]
		if !e.t.idle.Equal(e.at) || e.cn.dead || e.cn.topics[e.t.channel] != e.t {
			continue // watched again, or gone with its connection
		}
		delete(e.cn.topics, e.t.channel)
		writer = e.cn.queueLocked(request{e.t.channel, false}, nil, now) || writer
	}
	return writer
}

// conn returns the open connection, or opens one. One caller dials at a
// time, bounded by its context; the others wait for it, and dial
// themselves if it failed and their context allows.
func (s *subscriber) conn(ctx context.Context) (*subConn, error) {
	for {
		s.mu.Lock()
		switch {
		case s.closed:
			s.mu.Unlock()
			return nil, ErrClosed
		case s.cn != nil:
			cn := s.cn
			s.mu.Unlock()
			return cn, nil
		case s.dialing != nil:
			dialing := s.dialing
			s.mu.Unlock()
			select {
			case <-dialing:
				continue
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		dialing := make(chan struct{})
		s.dialing = dialing
		broken := s.broken
		s.broken = nil
		s.mu.Unlock()
		closeAll(broken)

		cn := &subConn{s: s, topics: make(map[string]*topic), pending: make(map[string][]*topic)}
		ps, err := s.s.t.PubSub(ctx, cn)

		s.mu.Lock()
		s.dialing = nil
		close(dialing)
		if err == nil && s.closed {
			cn.dead = true
			s.mu.Unlock()
			ps.Close() //nolint:errcheck // never used
			return nil, ErrClosed
		}
		if err != nil {
			s.mu.Unlock()
			return nil, fmt.Errorf("connecting: %w", err)
		}
		cn.ps = ps
		s.dials++
		if cn.dead { // broke already
			s.mu.Unlock()
			ps.Close() //nolint:errcheck // broken
			return cn, nil
		}
		s.cn = cn
		s.mu.Unlock()
		return cn, nil
	}
}

// close closes the open connection, waking every waiter, and makes later
// watches fail with ErrClosed.
func (s *subscriber) close() {
	s.mu.Lock()
	s.closed = true
	cn := s.cn
	if cn != nil {
		s.endLocked(cn, ErrClosed)
	}
	s.idle = nil
	broken := s.broken
	s.broken = nil
	s.mu.Unlock()
	if cn != nil {
		broken = append(broken, cn.ps)
	}
	closeAll(broken)
}

// closeAll closes connections that are of no more use.
func closeAll(conns []PubSub) {
	for _, ps := range conns {
		ps.Close() //nolint:errcheck // of no more use
	}
}
