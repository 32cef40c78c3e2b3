package redis

import "fmt"

// The events of one subscriber connection, from the transport's reader.

var _ PubSubHandler = (*subConn)(nil)

// Message is a turn: payload is the promise, then the key, as the
// release scripts publish it. The waiters of that key and promise are
// woken.
func (cn *subConn) Message(channel, payload string) {
	if cn.contentionMessage(channel) {
		return
	}
	if len(payload) < promiseLen {
		return
	}
	s := cn.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if cn.dead {
		return
	}
	at := watchKey{key: payload[promiseLen:], promise: payload[:promiseLen]}
	for w := range s.watches[at] {
		w.fireLocked()
	}
	// Kept for the waiter's next watch too, until its place is taken
	// again (joining): the watches on now may be ones it is replacing (a
	// watch that fired at an earlier turn, or one it sets anew), and a
	// watch that relies on this connection does not look at the key (see
	// seenLocked): the waiter would wait until its promises lapsed, first
	// in line with the line standing behind it.
	s.keepLocked(at, cn)
}

// Subscribed confirms the connection's SUBSCRIBE, or that of a contention
// channel.
func (cn *subConn) Subscribed(channel string) {
	if cn.contentionSubscribed(channel) {
		return
	}
	s := cn.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if !cn.dead && !cn.live {
		cn.live = true
		close(cn.ready)
	}
}

// Unsubscribed confirms the UNSUBSCRIBE of a contention channel that no
// holder watches any more: nothing to do.
func (cn *subConn) Unsubscribed(string) {}

// Broken ends cn: every waiter on it is woken, so that it looks at its key
// again, and the WatchTurn calls still waiting for the confirmation fail
// with ErrConnectionLost, or with the error reply that ended it (a
// subscription the server refused). The next WatchTurn opens a new
// connection.
func (cn *subConn) Broken(err error) {
	s := cn.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if cn.dead {
		return
	}
	if _, reply := s.s.t.ReplyText(err); reply {
		// The server refused a subscription (an ACL without Pub/Sub):
		// the connection is fine, the command is not allowed.
		s.endLocked(cn, fmt.Errorf("the subscriber connection ended at an error reply: %w", err))
	} else {
		s.endLocked(cn, fmt.Errorf("%w: %w", ErrConnectionLost, err))
	}
	if cn.ps != nil {
		// Closed by the next dial or by Close: Close waits for the
		// transport's reader, which may be the caller.
		s.broken = append(s.broken, cn.ps)
	}
}

// endLocked marks cn dead for reason and wakes every waiter on it. The
// caller sees to closing cn's PubSub, outside s.mu. s.mu must be held.
func (s *subscriber) endLocked(cn *subConn, reason error) {
	if cn.dead {
		return
	}
	cn.dead, cn.reason = true, reason
	if s.cn == cn {
		s.cn = nil
	}
	if !cn.live {
		close(cn.ready)
	}
	for _, ws := range s.watches {
		for w := range ws {
			if w.cn == cn {
				w.fireLocked()
			}
		}
	}
	s.breakContentionLocked(cn)
}
