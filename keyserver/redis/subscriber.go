package redis

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	redigo "github.com/gomodule/redigo/redis"

	"github.com/goredlock/goredlock/internal/redisscript"
)

// The subscriber is what Watch runs on: one Pub/Sub connection per Server,
// shared by every waiter of the process. A key's channel is subscribed when
// its first waiter comes and unsubscribed when its last one stops, and one
// reader goroutine per connection hands the releases Redis publishes to the
// waiters of the key. Waiters cost a channel and a map entry each, no
// goroutine and no round trip once their key's channel is subscribed.
//
// Nothing survives a broken connection: its reader wakes every waiter, who
// tries again, and the next Watch opens a new connection and subscribes
// anew. A Redis that restarted may have lost the key it was waiting on, and
// a release published while no connection was open reached nobody, so a
// waiter must look at the key again anyway.

// pingAfter is how long a subscriber connection may stay silent before a
// Watch sends it a PING: a later Watch then finds the PING overdue if the
// link is dead, and replaces the connection, rather than trusting it with
// more waiters.
const pingAfter = 5 * time.Second

// subscriber is the Pub/Sub side of a Server.
type subscriber struct {
	get         func(context.Context) (redigo.Conn, error) // dials, or takes a connection from the caller's Pool
	borrowed    bool                                       // get takes from the caller's Pool (see abort)
	dialTimeout time.Duration
	overdue     time.Duration // as the pipeline's: how long past its due a request may go unanswered
	pingAfter   time.Duration

	dials atomic.Int64 // connections opened, for tests

	mu         sync.Mutex
	cn         *subConn           // the open connection, nil when none
	dialing    chan struct{}      // closed when the dial in progress ends; nil when none
	cancelDial context.CancelFunc // ends the dial in progress
	closed     bool
	wg         sync.WaitGroup // the readers
}

// subConn is one subscriber connection. Its fields are guarded by the
// subscriber's mu, which is never held across I/O: rc's Receive is called
// by the reader alone, and its Send and Flush by one writer at a time.
type subConn struct {
	rc       redigo.Conn
	topics   map[string]*topic // by channel: subscribed, or being subscribed
	sent     []*request        // queued or written, not yet answered, oldest first
	outbox   []*request        // queued, not yet written
	writing  bool              // a caller is writing the outbox (see write)
	lastRead time.Time
	dead     bool  // closed or broken: nothing more is queued on it
	reason   error // why it was closed, when this side closed it
	aborted  bool  // abort has been called
	read     bool  // the reader has returned
}

// topic is one subscribed channel and its waiters. A channel that is
// unsubscribed and subscribed again gets a new topic, so that waiters of
// the new subscription wait for its own confirmation.
type topic struct {
	channel string
	waiters map[*watch]struct{} // until stopped; woken or not
	ready   chan struct{}       // closed once Redis confirmed or refused the SUBSCRIBE, or the connection broke
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

// request is a command written to a subscriber connection, answered in
// order: Redis confirms each channel of a (UN)SUBSCRIBE, and a PING, with a
// reply of its own.
type request struct {
	cmd     string // SUBSCRIBE, UNSUBSCRIBE or PING
	channel string
	topic   *topic    // SUBSCRIBE's
	due     time.Time // the watchdog measures lateness from it
}

// newSubscriber returns the subscriber of a Server whose connections get
// dials, or takes from the caller's Pool when borrowed.
func newSubscriber(get func(context.Context) (redigo.Conn, error), borrowed bool, dialTimeout time.Duration) *subscriber {
	return &subscriber{get: get, borrowed: borrowed, dialTimeout: dialTimeout, overdue: overdueLimit, pingAfter: pingAfter}
}

// watch starts watching key. It returns once Redis has confirmed the
// subscription to key's channel, at once when another waiter's confirmation
// covers it. A watch whose connection broke before the confirmation is
// tried once more on a new connection.
func (s *subscriber) watch(ctx context.Context, key string) (<-chan struct{}, func(), error) {
	channel := redisscript.ReleaseChannel(key)
	for retried := false; ; retried = true {
		cn, err := s.conn(ctx)
		if err != nil {
			return nil, nil, err
		}
		s.mu.Lock()
		writer := s.checkLocked(cn, time.Now())
		if cn.dead { // closed since conn returned it, or just now as overdue
			s.mu.Unlock()
			continue
		}
		t := cn.topics[channel]
		if t == nil {
			t = &topic{channel: channel, waiters: make(map[*watch]struct{}), ready: make(chan struct{})}
			cn.topics[channel] = t
			writer = cn.queueLocked(&request{cmd: "SUBSCRIBE", channel: channel, topic: t, due: due(ctx)}) || writer
		}
		w := &watch{key: key, topic: t, cn: cn, released: make(chan struct{})}
		t.waiters[w] = struct{}{}
		s.mu.Unlock()
		if writer {
			s.write(cn)
		}

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
	if w.stopped {
		s.mu.Unlock()
		return
	}
	w.stopped = true
	t, cn := w.topic, w.cn
	delete(t.waiters, w)
	if len(t.waiters) > 0 || cn.dead || cn.topics[t.channel] != t {
		s.mu.Unlock()
		return
	}
	delete(cn.topics, t.channel)
	writer := cn.queueLocked(&request{cmd: "UNSUBSCRIBE", channel: t.channel, due: time.Now()})
	s.mu.Unlock()
	if writer {
		s.write(cn)
	}
}

// conn returns the open connection, or opens one. One caller dials at a
// time, bounded by its context and the dial timeout; the others wait for
// it, and dial themselves if it failed and their context allows.
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
		dctx, cancel := context.WithTimeout(ctx, s.dialTimeout)
		s.dialing, s.cancelDial = dialing, cancel
		s.mu.Unlock()

		rc, err := s.get(dctx)
		cancel()

		s.mu.Lock()
		s.dialing, s.cancelDial = nil, nil
		close(dialing)
		if s.closed {
			s.mu.Unlock()
			if err == nil {
				rc.Close() //nolint:errcheck // never used
			}
			return nil, ErrClosed
		}
		if err != nil {
			s.mu.Unlock()
			return nil, connecting(err)
		}
		cn := &subConn{rc: rc, topics: make(map[string]*topic), lastRead: time.Now()}
		s.cn = cn
		s.dials.Add(1)
		s.wg.Add(1)
		go s.read(cn)
		s.mu.Unlock()
		return cn, nil
	}
}

// close ends the dial in progress and the open connection, and waits for
// its reader, which wakes every waiter. Later calls fail with ErrClosed.
func (s *subscriber) close() {
	s.mu.Lock()
	s.closed = true
	if s.cancelDial != nil {
		s.cancelDial()
	}
	if s.cn != nil {
		s.closeLocked(s.cn, ErrClosed)
	}
	s.mu.Unlock()
	s.wg.Wait()
}

// due is when a request made under ctx is due: its deadline, or for a
// context without one, the bound the pipeline gives such calls.
func due(ctx context.Context) time.Time {
	if d, ok := ctx.Deadline(); ok {
		return d
	}
	return time.Now().Add(ioTimeoutNoCtx)
}
