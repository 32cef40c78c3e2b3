package redis

import (
	"context"
	"errors"
	"fmt"
	"strings"
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

// checkLocked closes cn when its oldest unanswered request is overdue (a
// black-holed link, a server paused for seconds), and queues a PING when it
// has been silent for a while, so that a later call can tell. It reports
// whether the caller must write (see queueLocked). s.mu must be held.
func (s *subscriber) checkLocked(cn *subConn, now time.Time) bool {
	switch {
	case cn.dead:
	case len(cn.sent) > 0:
		if late := now.Sub(cn.sent[0].due); late > s.overdue {
			s.closeLocked(cn, fmt.Errorf("%w: no reply from the subscriber connection for %v past a request's deadline, so it was closed", ErrConnectionLost, s.overdue))
		}
	case len(cn.topics) > 0 && now.Sub(cn.lastRead) > s.pingAfter:
		return cn.queueLocked(&request{cmd: "PING", due: now})
	}
	return false
}

// queueLocked queues req to be written, and for its reply. It reports
// whether the caller is now cn's writer, and must call write once it has
// released s.mu: requests are written in the order they were queued, by one
// caller at a time, so that the replies come back in the order of sent.
// s.mu must be held, and cn must not be dead.
func (cn *subConn) queueLocked(req *request) bool {
	cn.sent = append(cn.sent, req)
	cn.outbox = append(cn.outbox, req)
	if cn.writing {
		return false // the writer takes it with its next batch
	}
	cn.writing = true
	return true
}

// write writes what is queued on cn, in batches of one flush, until nothing
// is left; only the caller queueLocked named calls it. Others queue behind
// it without waiting, so only the writer can be held up by a server that
// stopped reading (up to the connection's write timeout). A failed write
// closes the connection; its reader then fails what was queued. The writer
// also finishes what closeLocked and broke had to leave to it: they do not
// touch a connection from the caller's Pool while it is being written.
func (s *subscriber) write(cn *subConn) {
	var batch []*request
	for {
		s.mu.Lock()
		batch, cn.outbox = cn.outbox, batch[:0]
		if cn.dead || len(batch) == 0 {
			cn.writing = false
			cn.outbox = nil
			if cn.dead && !cn.aborted {
				cn.aborted = true
				abort(cn.rc)
			}
			giveBack := cn.dead && cn.read
			s.mu.Unlock()
			if giveBack {
				cn.rc.Close() //nolint:errcheck // broken already; this gives a pooled connection back
			}
			return
		}
		s.mu.Unlock()
		var err error
		for _, req := range batch {
			if req.channel != "" {
				err = cn.rc.Send(req.cmd, req.channel)
			} else {
				err = cn.rc.Send(req.cmd)
			}
			if err != nil {
				break
			}
		}
		if err == nil {
			err = cn.rc.Flush()
		}
		clear(batch)
		if err != nil {
			s.mu.Lock()
			s.closeLocked(cn, fmt.Errorf("%w: %w", ErrConnectionLost, err))
			s.mu.Unlock()
		}
	}
}

// closeLocked marks cn dead and closes its network connection, so that its
// reader returns and wakes every waiter; reason is what the Watch calls
// still setting up on it are told. A connection from the caller's Pool that
// is being written is left for its writer to close. s.mu must be held.
func (s *subscriber) closeLocked(cn *subConn, reason error) {
	if cn.reason == nil {
		cn.reason = reason
	}
	cn.dead = true
	if s.cn == cn {
		s.cn = nil
	}
	if !cn.aborted && (!s.borrowed || !cn.writing) {
		cn.aborted = true
		abort(cn.rc)
	}
}

// read hands each message to the waiters of its key, and each
// confirmation to the request it answers, until the connection fails.
func (s *subscriber) read(cn *subConn) {
	defer s.wg.Done()
	for {
		reply, err := receive(cn.rc)
		replyErr, isReply := err.(redigo.Error) // an error reply: a command failed, not the connection
		if err != nil && !isReply {
			s.broke(cn, err)
			return
		}
		s.mu.Lock()
		cn.lastRead = time.Now()
		if isReply {
			err = s.refusedLocked(cn, replyErr)
		} else {
			err = s.handleLocked(cn, reply)
		}
		s.mu.Unlock()
		if err != nil {
			s.broke(cn, err)
			return
		}
	}
}

// handleLocked acts on one reply. An error means the connection no longer
// makes sense and must be replaced. s.mu must be held.
func (s *subscriber) handleLocked(cn *subConn, reply any) error {
	if status, ok := reply.(string); ok && status == "PONG" { // outside subscribed mode
		return s.answeredLocked(cn, "PING", "")
	}
	parts, ok := reply.([]any)
	if !ok || len(parts) < 2 {
		return fmt.Errorf("unexpected reply %T on the subscriber connection", reply)
	}
	kind, _ := parts[0].([]byte)
	channel, _ := parts[1].([]byte)
	switch string(kind) {
	case "message":
		if len(parts) != 3 {
			return errors.New("a message without a payload on the subscriber connection")
		}
		key, _ := parts[2].([]byte)
		if t := cn.topics[string(channel)]; t != nil && t.live {
			for w := range t.waiters {
				if !w.fired && w.key == string(key) {
					w.fired = true
					close(w.released)
				}
			}
		}
		return nil
	case "subscribe", "unsubscribe":
		return s.answeredLocked(cn, string(kind), string(channel))
	case "pong":
		return s.answeredLocked(cn, "PING", "")
	}
	return fmt.Errorf("unexpected %q reply on the subscriber connection", kind)
}

// answeredLocked takes the oldest request off cn, which must be the one the
// reply (cmd, channel) answers, and confirms a subscription. s.mu must be
// held.
func (s *subscriber) answeredLocked(cn *subConn, cmd, channel string) error {
	req := cn.pop()
	if req == nil || !strings.EqualFold(req.cmd, cmd) || req.channel != channel {
		return fmt.Errorf("a %s reply on the subscriber connection answers no request", cmd)
	}
	if req.topic != nil {
		req.topic.live = true
		close(req.topic.ready)
	}
	return nil
}

// refusedLocked hands an error reply to the request it answers: a refused
// SUBSCRIBE (an ACL that denies the channel, say) fails its Watch calls.
// s.mu must be held.
func (s *subscriber) refusedLocked(cn *subConn, reply redigo.Error) error {
	req := cn.pop()
	if req == nil {
		return fmt.Errorf("an error reply on the subscriber connection answers no request: %w", reply)
	}
	if t := req.topic; t != nil {
		t.err = reply
		close(t.ready)
		if cn.topics[t.channel] == t {
			delete(cn.topics, t.channel)
		}
	}
	return nil
}

// broke ends a connection that failed: every waiter on it is woken, so that
// it looks at its key again, and the Watch calls still waiting for a
// confirmation fail with ErrConnectionLost (or the reason the connection
// was closed for). The next Watch opens a new connection.
func (s *subscriber) broke(cn *subConn, err error) {
	s.mu.Lock()
	s.closeLocked(cn, fmt.Errorf("%w: %w", ErrConnectionLost, err))
	for _, t := range cn.topics {
		for w := range t.waiters {
			if !w.fired {
				w.fired = true
				close(w.released)
			}
		}
	}
	for _, req := range cn.sent {
		if t := req.topic; t != nil {
			t.err = cn.reason
			close(t.ready)
		}
	}
	cn.sent, cn.topics = nil, nil
	cn.read = true
	giveBack := !cn.writing // else the writer does, once it has finished
	s.mu.Unlock()
	if giveBack {
		cn.rc.Close() //nolint:errcheck // broken already; this gives a pooled connection back
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

func (cn *subConn) pop() *request {
	if len(cn.sent) == 0 {
		return nil
	}
	req := cn.sent[0]
	cn.sent[0] = nil
	cn.sent = cn.sent[1:]
	return req
}

// due is when a request made under ctx is due: its deadline, or for a
// context without one, the bound the pipeline gives such calls.
func due(ctx context.Context) time.Time {
	if d, ok := ctx.Deadline(); ok {
		return d
	}
	return time.Now().Add(ioTimeoutNoCtx)
}

// receive reads one reply with no read deadline, whatever the connection's
// read timeout: a subscriber connection is silent while no key is
// released, and that is no failure.
func receive(rc redigo.Conn) (any, error) {
	if _, ok := rc.(redigo.ConnWithTimeout); ok {
		return redigo.ReceiveWithTimeout(rc, 0)
	}
	return rc.Receive()
}

// abort closes rc's network connection at once, so that its reader's
// Receive (and a write blocked on a server that stopped reading) returns,
// without a write or a read of its own. Close would do for a connection
// redigo dialed, but a connection from a redigo.Pool answers Close by
// unsubscribing and reading the replies itself, racing the reader (and
// waiting forever for a server that does not answer). A DoContext whose
// deadline has passed closes the network connection of either kind before
// it writes anything; Close then follows once the reader and the writer
// are done, to give the connection back. On a Pool's connection that
// DoContext must not run beside a Send, which closeLocked sees to.
func abort(rc redigo.Conn) {
	cc, ok := rc.(redigo.ConnWithContext)
	if !ok {
		rc.Close() //nolint:errcheck // broken on purpose
		return
	}
	ctx, cancel := context.WithDeadline(context.Background(), time.Time{})
	defer cancel()
	cc.DoContext(ctx, "") //nolint:errcheck // fails on purpose
}
