package goredis

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"

	"github.com/redis/go-redis/v9"

	"github.com/goredlock/goredlock/internal/redisscript"
)

// The subscriber is what Watch runs on: one go-redis PubSub per Server,
// shared by every waiter of the process. A key's channel is subscribed when
// its first waiter comes and unsubscribed when its last one stops. Two
// goroutines per PubSub, owned by the Server, do the I/O: a writer that
// sends the (UN)SUBSCRIBEs in the order they were decided, so that Watch
// and stop never wait on each other's round trips, and a reader that hands
// confirmations to the Watch calls waiting for them and releases to the
// waiters of the key. Waiters cost a channel and a map entry each.
//
// Nothing survives a broken connection. go-redis would reconnect and
// resubscribe on its own, silently, but a release published while it did
// reached nobody, and a restarted Redis may have lost the key: every waiter
// must look at its key again. So a PubSub whose Receive or write fails, or
// that confirms a SUBSCRIBE nobody sent (go-redis's resubscription), is
// closed and its waiters woken; the next Watch opens a new one.

// subscriber is the Pub/Sub side of a Server.
type subscriber struct {
	client redis.UniversalClient

	opened atomic.Int64 // PubSubs opened, for tests

	mu     sync.Mutex
	cn     *subConn // the open PubSub, nil when none
	closed bool
	wg     sync.WaitGroup // the writers and readers
}

// subConn is one PubSub. Its fields are guarded by the subscriber's mu,
// which is never held across I/O.
type subConn struct {
	ps      *redis.PubSub
	topics  map[string]*topic   // by channel: subscribed, or being subscribed
	pending map[string][]*topic // by channel, unanswered requests, oldest first: a SUBSCRIBE's topic, or nil for an UNSUBSCRIBE
	outbox  []request           // decided, not yet written
	kick    chan struct{}       // wakes the writer; buffered
	done    chan struct{}       // closed when the PubSub is dead
	dead    bool                // closed or broken: nothing more is queued on it
	reason  error               // why: what Watch calls still setting up on it are told
	reading bool                // the reader has been started
}

// request is an (UN)SUBSCRIBE the writer is to send.
type request struct {
	subscribe bool
	channel   string
}

// topic is one subscribed channel and its waiters. A channel that is
// unsubscribed and subscribed again gets a new topic, so that waiters of
// the new subscription wait for its own confirmation.
type topic struct {
	channel string
	waiters map[*watch]struct{} // until stopped; woken or not
	ready   chan struct{}       // closed once Redis confirmed the SUBSCRIBE, or the PubSub died
	err     error               // why it failed; set before ready is closed
	live    bool                // confirmed: releases are delivered to the waiters
}

// watch is one Watch, from its start to its stop.
type watch struct {
	key      string
	topic    *topic
	cn       *subConn
	released chan struct{}
	fired    bool // released is closed
	stopped  bool
}

func newSubscriber(client redis.UniversalClient) *subscriber {
	return &subscriber{client: client}
}

// watch starts watching key. It returns once Redis has confirmed the
// subscription to key's channel, at once when another waiter's confirmation
// covers it. A watch whose PubSub broke before the confirmation is tried
// once more on a new one.
func (s *subscriber) watch(ctx context.Context, key string) (<-chan struct{}, func(), error) {
	channel := redisscript.ReleaseChannel(key)
	for retried := false; ; retried = true {
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			return nil, nil, ErrClosed
		}
		cn := s.cn
		if cn == nil {
			cn = s.openLocked()
		}
		t := cn.topics[channel]
		if t == nil {
			t = &topic{channel: channel, waiters: make(map[*watch]struct{}), ready: make(chan struct{})}
			cn.topics[channel] = t
			cn.queueLocked(request{subscribe: true, channel: channel}, t)
		}
		w := &watch{key: key, topic: t, cn: cn, released: make(chan struct{})}
		t.waiters[w] = struct{}{}
		s.mu.Unlock()

		select {
		case <-t.ready:
		case <-ctx.Done():
			s.stop(w)
			return nil, nil, ctx.Err()
		}
		if t.err == nil { // set before ready was closed
			return w.released, func() { s.stop(w) }, nil
		}
		s.stop(w)
		if retried || !errors.Is(t.err, ErrConnectionLost) || ctx.Err() != nil {
			return nil, nil, t.err
		}
	}
}

// stop ends w, and unsubscribes its channel when w was its last waiter.
func (s *subscriber) stop(w *watch) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if w.stopped {
		return
	}
	w.stopped = true
	t, cn := w.topic, w.cn
	delete(t.waiters, w)
	if len(t.waiters) > 0 || cn.dead || cn.topics[t.channel] != t {
		return
	}
	delete(cn.topics, t.channel)
	cn.queueLocked(request{channel: t.channel}, nil)
}

// openLocked makes a new PubSub the open one and starts its writer, which
// starts the reader once the first SUBSCRIBE is written (go-redis connects
// on it). go-redis makes a PubSub without any I/O. s.mu must be held.
func (s *subscriber) openLocked() *subConn {
	cn := &subConn{
		ps:      s.client.Subscribe(context.Background()),
		topics:  make(map[string]*topic),
		pending: make(map[string][]*topic),
		kick:    make(chan struct{}, 1),
		done:    make(chan struct{}),
	}
	s.cn = cn
	s.opened.Add(1)
	s.wg.Add(1)
	go s.write(cn)
	return cn
}

// queueLocked queues req for cn's writer, and its reply: t for a
// SUBSCRIBE, nil for an UNSUBSCRIBE. s.mu must be held, and cn must not be
// dead.
func (cn *subConn) queueLocked(req request, t *topic) {
	cn.outbox = append(cn.outbox, req)
	cn.pending[req.channel] = append(cn.pending[req.channel], t)
	select {
	case cn.kick <- struct{}{}:
	default: // the writer has been kicked already
	}
}

// close ends the open PubSub, which wakes every waiter, and waits for its
// goroutines. Later calls fail with ErrClosed.
func (s *subscriber) close() {
	s.mu.Lock()
	s.closed = true
	cn := s.cn
	if cn != nil {
		s.endLocked(cn, ErrClosed)
	}
	s.mu.Unlock()
	if cn != nil {
		cn.ps.Close() //nolint:errcheck // ends the reader's Receive; a PubSub closed already says so
	}
	s.wg.Wait()
}
