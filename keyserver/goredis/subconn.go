package goredis

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// The life of one PubSub: requests are queued under the subscriber's mutex
// and written by its writer, replies are read by its reader and handed to
// the Watch calls and waiters they answer, and a failure on either side
// ends the PubSub for all.

// write sends what is queued on cn until cn dies, grouping consecutive
// requests of one kind into one command (Redis answers each channel of it
// in order), and starts cn's reader after the first write: go-redis opens
// the connection on it. A failed write ends cn; go-redis's own reconnect
// and resubscription would hide a release lost meanwhile.
func (s *subscriber) write(cn *subConn) {
	defer s.wg.Done()
	ctx := context.Background() // go-redis bounds a write by its WriteTimeout, a dial by its DialTimeout
	var channels []string
	for {
		select {
		case <-cn.kick:
		case <-cn.done:
			return
		}
		s.mu.Lock()
		batch, dead := cn.outbox, cn.dead
		cn.outbox = nil
		s.mu.Unlock()
		if dead {
			return
		}
		for len(batch) > 0 {
			channels = channels[:0]
			n := 0
			for ; n < len(batch) && batch[n].subscribe == batch[0].subscribe; n++ {
				channels = append(channels, batch[n].channel)
			}
			var err error
			if batch[0].subscribe {
				err = cn.ps.Subscribe(ctx, channels...)
			} else {
				err = cn.ps.Unsubscribe(ctx, channels...)
			}
			if err != nil {
				s.broke(cn, err)
				return
			}
			batch = batch[n:]
		}
		s.mu.Lock()
		if !cn.reading && !cn.dead {
			cn.reading = true
			s.wg.Add(1) // the writer's own count keeps Close's Wait from returning first
			go s.read(cn)
		}
		s.mu.Unlock()
	}
}

// read hands each release to the waiters of its key, and each
// confirmation to the request it answers, until cn fails or is closed.
func (s *subscriber) read(cn *subConn) {
	defer s.wg.Done()
	ctx := context.Background() // no deadline: a subscriber is silent while no key is released
	for {
		msg, err := cn.ps.Receive(ctx)
		if err != nil {
			s.broke(cn, err)
			return
		}
		s.mu.Lock()
		if cn.dead {
			s.mu.Unlock()
			return
		}
		err = s.handleLocked(cn, msg)
		s.mu.Unlock()
		if err != nil {
			s.broke(cn, err)
			return
		}
	}
}

// handleLocked acts on one message. An error means that the PubSub no
// longer says what this side asked of it, and must be replaced. s.mu must
// be held.
func (s *subscriber) handleLocked(cn *subConn, msg any) error {
	switch m := msg.(type) {
	case *redis.Message:
		if t := cn.topics[m.Channel]; t != nil && t.live {
			for w := range t.waiters {
				if !w.fired && w.key == m.Payload {
					w.fired = true
					close(w.released)
				}
			}
		}
	case *redis.Subscription:
		q := cn.pending[m.Channel]
		subscribe := m.Kind == "subscribe"
		if len(q) == 0 || (m.Kind != "subscribe" && m.Kind != "unsubscribe") || (q[0] != nil) != subscribe {
			// A SUBSCRIBE nobody sent is go-redis resubscribing a
			// connection it replaced.
			return fmt.Errorf("a %s of %q on the subscriber connection answers no request", m.Kind, m.Channel)
		}
		t := q[0]
		if len(q) == 1 {
			delete(cn.pending, m.Channel)
		} else {
			q[0] = nil
			cn.pending[m.Channel] = q[1:]
		}
		if t != nil {
			t.live = true
			close(t.ready)
		}
	}
	return nil // a PONG: nothing to do
}

// broke ends cn, which failed with err, and closes its PubSub. The next
// Watch opens a new one.
func (s *subscriber) broke(cn *subConn, err error) {
	s.mu.Lock()
	s.endLocked(cn, fmt.Errorf("%w: %w", ErrConnectionLost, err))
	s.mu.Unlock()
	cn.ps.Close() //nolint:errcheck // broken already, or closed by Close
}

// endLocked marks cn dead and wakes every waiter on it, so that it looks
// at its key again; the Watch calls still waiting for a confirmation fail
// with reason. The caller closes cn's PubSub, outside s.mu: go-redis holds
// its own lock across a dial. s.mu must be held.
func (s *subscriber) endLocked(cn *subConn, reason error) {
	if cn.dead {
		return
	}
	cn.dead, cn.reason = true, reason
	if s.cn == cn {
		s.cn = nil
	}
	close(cn.done)
	for _, t := range cn.topics {
		for w := range t.waiters {
			if !w.fired {
				w.fired = true
				close(w.released)
			}
		}
	}
	for _, q := range cn.pending {
		for _, t := range q {
			if t != nil {
				t.err = reason
				close(t.ready)
			}
		}
	}
	cn.topics, cn.pending, cn.outbox = nil, nil, nil
}
