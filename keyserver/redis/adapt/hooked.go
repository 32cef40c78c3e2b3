package adapt

import (
	"context"
	"errors"
	"sync"

	"github.com/goredlock/goredlock/keyserver/redis"
)

// HookedPubSub is the PubSub of a client that delivers Pub/Sub events to
// hooks and reports the end of the connection on a channel, as rueidis
// and valkey-go do: the transport sets its hooks to call the handler's
// Message, and Confirm for each (un)subscription, and passes here the
// channel the client reports on (an error, or closed when the client ended
// the hooks, which a Server must also take for a break), how to send
// (UN)SUBSCRIBE on the connection, and how to close it. Close calls
// closeConn and returns once the goroutine that watches ends has.
func HookedPubSub(h redis.PubSubHandler, ends <-chan error, send Send, closeConn func()) redis.PubSub {
	p := &hooked{h: h, send: send, closeConn: closeConn, stop: make(chan struct{}), done: make(chan struct{})}
	go p.watch(ends)
	return p
}

// Send is how HookedPubSub sends (UN)SUBSCRIBE channel.
type Send struct {
	// Subscribe and Unsubscribe send SUBSCRIBE or UNSUBSCRIBE channel on
	// the connection without waiting for the confirmation, which the
	// client passes to Confirm.
	Subscribe, Unsubscribe func(ctx context.Context, channel string) error
}

// Confirm passes an (un)subscription a client reported by the kind Redis
// names it ("subscribe", "unsubscribe") to h.
func Confirm(h redis.PubSubHandler, kind, channel string) {
	switch kind {
	case "subscribe":
		h.Subscribed(channel)
	case "unsubscribe":
		h.Unsubscribed(channel)
	}
}

// errHooksEnded is why a connection whose client ended its hooks without
// an error is given up.
var errHooksEnded = errors.New("the client ended the subscriber connection's hooks")

type hooked struct {
	h         redis.PubSubHandler
	send      Send
	closeConn func()
	once      sync.Once
	stop      chan struct{} // closed by Close
	done      chan struct{} // closed when watch has returned
}

func (p *hooked) watch(ends <-chan error) {
	defer close(p.done)
	select {
	case err := <-ends:
		if err == nil {
			err = errHooksEnded
		}
		p.h.Broken(err)
	case <-p.stop:
	}
}

func (p *hooked) Subscribe(ctx context.Context, channel string) error {
	return p.send.Subscribe(ctx, channel)
}

func (p *hooked) Unsubscribe(ctx context.Context, channel string) error {
	return p.send.Unsubscribe(ctx, channel)
}

func (p *hooked) Close() error {
	p.once.Do(func() {
		close(p.stop)
		p.closeConn()
		<-p.done
	})
	return nil
}
