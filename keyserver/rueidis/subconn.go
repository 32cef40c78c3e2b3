package rueidis

import (
	"errors"
	"fmt"

	"github.com/redis/rueidis"
)

// The life of one dedicated connection: requests are queued under the
// subscriber's mutex and written by its writer, replies reach the hooks and
// are handed to the Watch calls and waiters they answer, and a failure on
// either side ends the connection for all.

// errHooksEnded is why a connection whose hooks rueidis ended without an
// error is given up.
var errHooksEnded = errors.New("rueidis ended the subscriber connection's hooks")

// write takes cn's connection from rueidis, sends what is queued on it
// until cn ends, grouping consecutive requests of one kind into one
// command (Redis answers each channel of it in order), and then closes the
// connection. A disconnect ends cn: rueidis reports it on the hooks' error
// channel, and fails the command being written.
func (s *subscriber) write(cn *subConn) {
	defer s.wg.Done()
	dc, cancel := s.client.Dedicate()
	defer cancel()
	defer dc.Close() // the connection is in subscribed mode: not one to give back
	errs := dc.SetPubSubHooks(rueidis.PubSubHooks{
		OnMessage:      func(m rueidis.PubSubMessage) { s.message(cn, m) },
		OnSubscription: func(sub rueidis.PubSubSubscription) { s.subscription(cn, sub) },
	})
	var channels []string
	for {
		select {
		case <-cn.kick:
		case <-cn.ctx.Done():
			return
		case err := <-errs: // closed without an error when rueidis ends the hooks
			if err == nil {
				err = errHooksEnded
			}
			s.broke(cn, err)
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
			var cmd rueidis.Completed
			if batch[0].subscribe {
				cmd = dc.B().Subscribe().Channel(channels...).Build()
			} else {
				cmd = dc.B().Unsubscribe().Channel(channels...).Build()
			}
			if err := dc.Do(cn.ctx, cmd).Error(); err != nil {
				s.broke(cn, err)
				return
			}
			batch = batch[n:]
		}
	}
}

// message hands a release to the waiters of its key.
func (s *subscriber) message(cn *subConn, m rueidis.PubSubMessage) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if cn.dead {
		return
	}
	if t := cn.topics[m.Channel]; t != nil && t.live {
		for w := range t.waiters {
			if !w.fired && w.key == m.Message {
				w.fired = true
				close(w.released)
			}
		}
	}
}

// subscription hands a confirmation to the request it answers. One that
// answers no request means that the connection no longer says what this
// side asked of it, and ends it.
func (s *subscriber) subscription(cn *subConn, m rueidis.PubSubSubscription) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if cn.dead {
		return
	}
	q := cn.pending[m.Channel]
	subscribe := m.Kind == "subscribe"
	if len(q) == 0 || (m.Kind != "subscribe" && m.Kind != "unsubscribe") || (q[0] != nil) != subscribe {
		s.endLocked(cn, fmt.Errorf("%w: a %s of %q on the subscriber connection answers no request", ErrConnectionLost, m.Kind, m.Channel))
		return
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

// broke ends cn, which failed with err. The next Watch opens a new
// connection.
func (s *subscriber) broke(cn *subConn, err error) {
	s.mu.Lock()
	s.endLocked(cn, fmt.Errorf("%w: %w", ErrConnectionLost, err))
	s.mu.Unlock()
}

// endLocked marks cn dead and wakes every waiter on it, so that it looks
// at its key again; the Watch calls still waiting for a confirmation fail
// with reason. Its writer then closes the connection, also when it is
// waiting for Redis: its commands' context ends. s.mu must be held.
func (s *subscriber) endLocked(cn *subConn, reason error) {
	if cn.dead {
		return
	}
	cn.dead = true
	if s.cn == cn {
		s.cn = nil
	}
	cn.cancel()
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
