package goredis

import (
	"context"
	"sync"

	goredis "github.com/redis/go-redis/v9"

	"github.com/goredlock/goredlock/keyserver/redis"
)

// PubSub opens a go-redis PubSub. go-redis dials on the first SUBSCRIBE,
// so its reader starts after that.
func (t *transport) PubSub(_ context.Context, h redis.PubSubHandler) (redis.PubSub, error) {
	return &pubsub{ps: t.c.Subscribe(context.Background()), h: h, read: make(chan struct{})}, nil
}

// pubsub is one go-redis PubSub. Its reader stops at the first error:
// go-redis would reconnect and resubscribe on its own, hiding the turns
// published meanwhile, which the Server must hear of as a break instead.
type pubsub struct {
	ps    *goredis.PubSub
	h     redis.PubSubHandler
	start sync.Once
	read  chan struct{} // closed when the reader has returned
}

func (p *pubsub) Subscribe(ctx context.Context, channel string) error {
	if err := p.ps.Subscribe(ctx, channel); err != nil {
		return err
	}
	p.start.Do(func() { go p.receive() })
	return nil
}

func (p *pubsub) Unsubscribe(ctx context.Context, channel string) error {
	return p.ps.Unsubscribe(ctx, channel)
}

// Close closes the PubSub and waits for its reader, if it started.
func (p *pubsub) Close() error {
	err := p.ps.Close()
	p.start.Do(func() { close(p.read) }) // never started: nothing to wait for
	<-p.read
	return err
}

func (p *pubsub) receive() {
	defer close(p.read)
	for {
		msg, err := p.ps.Receive(context.Background())
		if err != nil {
			p.h.Broken(err)
			return
		}
		switch m := msg.(type) {
		case *goredis.Message:
			p.h.Message(m.Channel, m.Payload)
		case *goredis.Subscription:
			if m.Kind == "subscribe" {
				p.h.Subscribed(m.Channel)
			} else {
				p.h.Unsubscribed(m.Channel)
			}
		}
	}
}
