package rueidis

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"

	"github.com/redis/rueidis"

	"github.com/goredlock/goredlock/internal/redisscript"
)

// The subscriber is what Watch runs on: one dedicated rueidis connection
// per Server, shared by every waiter of the process. A key's channel is
// subscribed when its first waiter comes and unsubscribed when its last
// one stops. One goroutine per connection, owned by the Server, takes the
// connection from rueidis, sends the (UN)SUBSCRIBEs in the order they were
// decided, so that Watch and stop never wait on each other's round trips,
// and closes the connection when it ends. rueidis calls the connection's
// Pub/Sub hooks, one at a time, with the confirmations, handed to the Watch
// calls waiting for them, and the releases, handed to the waiters of the
// key. Waiters cost a channel and a map entry each.
//
// Nothing survives a broken connection: every waiter on it is woken, who
// tries again, and the next Watch opens a new connection. A Redis that
// restarted may have lost the key it was waiting on, and a release
// published while no connection was open reached nobody, so a waiter must
// look at the key again anyway.

// subscriber is the Pub/Sub side of a Server.
type subscriber struct {
	client rueidis.Client

	opened atomic.Int64 // connections opened, for tests

	mu     sync.Mutex
	cn     *subConn // the open connection, nil when none
	closed bool
	wg     sync.WaitGroup // the writers
}

// subConn is one dedicated connection. Its fields are guarded by the
// subscriber's mu, which is never held across I/O.
type subConn struct {
	ctx     context.Context // of the writer's commands; cancelled when the connection ends
	cancel  context.CancelFunc
	topics  map[string]*topic   // by channel: subscribed, or being subscribed
	pending map[string][]*topic // by channel, unanswered requests, oldest first: a SUBSCRIBE's topic, or nil for an UNSUBSCRIBE
	outbox  []request           // decided, not yet written
	kick    chan struct{}       // wakes the writer; buffered
	dead    bool                // closed or broken: nothing more is queued on it
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
	ready   chan struct{}       // closed once Redis confirmed the SUBSCRIBE, or the connection ended
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

func newSubscriber(client rueidis.Client) *subscriber {
	return &subscriber{client: client}
}

// watch starts watching key. It returns once Redis has confirmed the
// subscription to key's channel, at once when another waiter's confirmation
// covers it. A watch whose connection broke before the confirmation is
// tried once more on a new one.
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

// openLocked makes a new connection the open one and starts its writer,
// which takes the connection from rueidis (a dial, which s.mu must not wait
// for). s.mu must be held.
func (s *subscriber) openLocked() *subConn {
	ctx, cancel := context.WithCancel(context.Background())
	cn := &subConn{
		ctx:     ctx,
		cancel:  cancel,
		topics:  make(map[string]*topic),
		pending: make(map[string][]*topic),
		kick:    make(chan struct{}, 1),
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

// close ends the open connection, which wakes every waiter, and waits for
// its writer to close it. Later calls fail with ErrClosed.
func (s *subscriber) close() {
	s.mu.Lock()
	s.closed = true
	if s.cn != nil {
		s.endLocked(s.cn, ErrClosed)
	}
	s.mu.Unlock()
	s.wg.Wait()
}
