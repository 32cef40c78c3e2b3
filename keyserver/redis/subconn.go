package redis

import (
	"context"
	"fmt"
	"time"
)

// The life of one subscriber connection: requests are queued under the
// subscriber's mutex and written by one caller at a time, in order, so
// that Redis confirms them in the order of pending; events come from the
// transport's reader through the PubSubHandler methods below; a failure
// on either side ends the connection for all.

var _ PubSubHandler = (*subConn)(nil)

// queueLocked queues req, whose topic t is nil for an UNSUBSCRIBE, and
// reports whether the caller is now cn's writer and must call write once
// it has released s.mu. s.mu must be held, and cn must not be dead.
func (cn *subConn) queueLocked(req request, t *topic, now time.Time) bool {
	cn.outbox = append(cn.outbox, req)
	cn.pending[req.channel] = append(cn.pending[req.channel], t)
	cn.sent = append(cn.sent, now)
	if cn.writing {
		return false // the writer takes it with its next batch
	}
	cn.writing = true
	return true
}

// write writes what is queued on cn until nothing is left; only the caller
// queueLocked named calls it. Others queue behind it without waiting, so
// only the writer can be held up by a server that stopped reading (up to
// the transport's write timeout). A failed write ends the connection.
func (s *subscriber) write(cn *subConn) {
	ctx := context.Background() // a write is bounded by the transport's write timeout
	var batch []request
	for {
		s.mu.Lock()
		batch, cn.outbox = cn.outbox, batch[:0]
		if cn.dead || len(batch) == 0 {
			cn.writing = false
			cn.outbox = nil
			s.mu.Unlock()
			return
		}
		s.mu.Unlock()
		for _, req := range batch {
			var err error
			if req.subscribe {
				err = cn.ps.Subscribe(ctx, req.channel)
			} else {
				err = cn.ps.Unsubscribe(ctx, req.channel)
			}
			if err != nil {
				cn.Broken(err)
				break
			}
		}
	}
}

// Message hands a turn to the waiters of its line: the waiter the key was
// promised to is woken, the others hear that the line moved.
func (cn *subConn) Message(channel, payload string) {
	s := cn.s
	s.mu.Lock()
	defer s.mu.Unlock()
	t := cn.topics[channel]
	if cn.dead || t == nil || !t.live {
		return
	}
	for w := range t.watches {
		if w.promise == payload {
			w.fireLocked()
		} else if w.moved != nil && !w.fired {
			w.moved()
		}
	}
}

// Subscribed confirms the oldest SUBSCRIBE of channel.
func (cn *subConn) Subscribed(channel string) { cn.confirmed(channel, true) }

// Unsubscribed confirms the oldest UNSUBSCRIBE of channel.
func (cn *subConn) Unsubscribed(channel string) { cn.confirmed(channel, false) }

func (cn *subConn) confirmed(channel string, subscribe bool) {
	s := cn.s
	s.mu.Lock()
	if cn.dead {
		s.mu.Unlock()
		return
	}
	q := cn.pending[channel]
	if len(q) == 0 || (q[0] != nil) != subscribe {
		// A confirmation nobody asked for: a client that resubscribed a
		// connection it replaced, which may have lost turns meanwhile.
		s.mu.Unlock()
		cn.Broken(fmt.Errorf("a confirmation of %q on the subscriber connection answers no request", channel))
		return
	}
	if len(q) == 1 {
		delete(cn.pending, channel)
	} else {
		q[0] = nil
		cn.pending[channel] = q[1:]
	}
	cn.sent = cn.sent[1:]
	if t := q[0]; t != nil {
		t.live = true
		t.settle(nil)
	}
	s.mu.Unlock()
}

// Broken ends cn: every waiter on it is woken, so that it looks at its key
// again, and the WatchTurn calls still waiting for a confirmation fail with
// ErrConnectionLost. The next WatchTurn opens a new connection.
func (cn *subConn) Broken(err error) {
	s := cn.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if cn.dead {
		return
	}
	s.endLocked(cn, fmt.Errorf("%w: %w", ErrConnectionLost, err))
	if cn.ps != nil {
		// Closed by the next dial or by Close: Close waits for the
		// transport's reader, which may be the caller.
		s.broken = append(s.broken, cn.ps)
	}
}

// endLocked marks cn dead for reason and wakes everyone on it. The caller
// closes cn's PubSub, outside s.mu. s.mu must be held.
func (s *subscriber) endLocked(cn *subConn, reason error) {
	if cn.dead {
		return
	}
	cn.dead, cn.reason = true, reason
	if s.cn == cn {
		s.cn = nil
	}
	for _, t := range cn.topics {
		t.settle(reason)
		for w := range t.watches {
			w.fireLocked()
		}
	}
	for _, q := range cn.pending {
		for _, t := range q {
			if t != nil {
				t.settle(reason)
			}
		}
	}
	cn.topics, cn.pending, cn.outbox, cn.sent = map[string]*topic{}, nil, nil, nil
}

// settle closes t's ready, with err when the subscription failed.
func (t *topic) settle(err error) {
	if !t.settled {
		t.settled, t.err = true, err
		close(t.ready)
	}
}
