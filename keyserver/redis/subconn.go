package redis

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	redigo "github.com/gomodule/redigo/redis"
)

// The life of one subscriber connection: requests are queued under the
// subscriber's mutex and written by one caller at a time, replies are read
// by the connection's reader and handed to the requests and waiters they
// answer, and a failure on either side ends the connection for all.

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

// pop takes the oldest unanswered request off cn: the one the next reply
// answers.
func (cn *subConn) pop() *request {
	if len(cn.sent) == 0 {
		return nil
	}
	req := cn.sent[0]
	cn.sent[0] = nil
	cn.sent = cn.sent[1:]
	return req
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
