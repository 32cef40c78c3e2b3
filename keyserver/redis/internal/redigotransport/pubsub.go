package redigotransport

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	redigo "github.com/gomodule/redigo/redis"
)

// pubSub is what both transports share: Pub/Sub connections and the
// reading of error replies.
type pubSub struct {
	get         func(context.Context) (redigo.Conn, error) // dials, or takes from the caller's Pool
	borrowed    bool                                       // get takes from the caller's Pool (see abort)
	dialTimeout time.Duration
}

// ReplyText returns the text of a redigo error reply.
func (pubSub) ReplyText(err error) (string, bool) {
	var reply redigo.Error
	if errors.As(err, &reply) {
		return string(reply), true
	}
	return "", false
}

// PubSub opens a connection for the subscriber: dialed as the others are
// (password, TLS, client name), or taken from the caller's Pool by New's
// Server, which holds it until it breaks or the Server closes.
func (r pubSub) PubSub(ctx context.Context, h Handler) (Subscription, error) {
	ctx, cancel := context.WithTimeout(ctx, r.dialTimeout)
	defer cancel()
	rc, err := r.get(ctx)
	if err != nil {
		return nil, err
	}
	ps := &redigoConnPubSub{rc: rc, h: h, borrowed: r.borrowed, read: make(chan struct{})}
	go ps.receive()
	return ps, nil
}

// redigoConnPubSub is one subscriber connection of redigo. redigo allows
// one goroutine in Send and Flush and another in Receive: the subscriber's
// writer (one at a time, wmu) and receive.
type redigoConnPubSub struct {
	rc       redigo.Conn
	h        Handler
	borrowed bool
	read     chan struct{} // closed when receive has returned

	wmu       sync.Mutex
	closeOnce sync.Once
}

func (ps *redigoConnPubSub) Subscribe(_ context.Context, channel string) error {
	return ps.send("SUBSCRIBE", channel)
}

func (ps *redigoConnPubSub) Unsubscribe(_ context.Context, channel string) error {
	return ps.send("UNSUBSCRIBE", channel)
}

func (ps *redigoConnPubSub) send(cmd, channel string) error {
	ps.wmu.Lock()
	defer ps.wmu.Unlock()
	if err := ps.rc.Send(cmd, channel); err != nil {
		return err
	}
	return ps.rc.Flush()
}

// Close closes the network connection at once, waits for receive, and
// gives a borrowed connection back to its Pool. A connection from the
// caller's Pool cannot be closed under a write in progress: Close then
// waits for that write, up to the Pool's write timeout.
func (ps *redigoConnPubSub) Close() error {
	ps.closeOnce.Do(func() {
		if ps.borrowed {
			ps.wmu.Lock()
			defer ps.wmu.Unlock()
		}
		abort(ps.rc)
		<-ps.read
		ps.rc.Close() //nolint:errcheck // broken on purpose; this gives a pooled connection back
	})
	return nil
}

// receive hands each message and confirmation to the handler until the
// connection fails or is closed.
func (ps *redigoConnPubSub) receive() {
	defer close(ps.read)
	for {
		reply, err := receive(ps.rc)
		if err == nil {
			err = ps.handle(reply)
		}
		if err != nil {
			ps.h.Broken(err)
			return
		}
	}
}

// handle passes one reply to the handler; an error means the connection no
// longer makes sense.
func (ps *redigoConnPubSub) handle(reply any) error {
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
		payload, _ := parts[2].([]byte)
		ps.h.Message(string(channel), string(payload))
	case "subscribe":
		ps.h.Subscribed(string(channel))
	case "unsubscribe":
		ps.h.Unsubscribed(string(channel))
	case "pong":
	default:
		return fmt.Errorf("unexpected %q reply on the subscriber connection", kind)
	}
	return nil
}

// receive reads one reply with no read deadline, whatever the connection's
// read timeout: a subscriber connection is silent while no turn comes, and
// that is no failure.
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
// waiting forever for a server that does not answer). A ReceiveContext
// whose deadline has passed closes the network connection of either kind
// before it reads anything (see kill), and, unlike a DoContext, writes none
// of a pooled connection's state; Close then follows once the reader is
// done, to give the connection back.
func abort(rc redigo.Conn) {
	cc, ok := rc.(redigo.ConnWithContext)
	if !ok {
		rc.Close() //nolint:errcheck // broken on purpose
		return
	}
	kill(cc)
}
