// Package valkey runs the Redis key server (keyserver/redis) over a
// valkey-go (github.com/valkey-io/valkey-go) client, for Valkey, the
// Linux Foundation's fork of Redis, or for Redis itself:
//
//	var servers []keyserver.KeyServer
//	for _, c := range []valkey.Client{c1, c2, c3} { // three independent masters
//		s := valkeyks.New(c)
//		defer s.Close() // before c.Close: waits for calls still in flight
//		servers = append(servers, s)
//	}
//	client, err := redlock.New(servers)
//
// Import it under another name than valkey-go's own package (the examples
// use valkeyks). Any valkey.Client counts as ONE key server, as with
// keyserver/rueidis, whose client valkey-go was forked from: a single node,
// a Sentinel-managed master or a Cluster, each replicating asynchronously,
// so give redlock.New several independent deployments for locks that
// survive failovers.
//
// This package is only the transport, and shows what adding a Redis client
// costs: the scripts, the waiting line, the fencing counters and the
// classification of errors are keyserver/redis's, and so are the keys, so
// locks taken through valkey-go and through the other clients exclude each
// other. Every call runs detached ([adapt.Detach]), as valkey-go, like
// rueidis, bounds a command by its context's deadline but not always by
// its cancellation, nor the reconnection that may come before it; Close
// waits for what is still running.
package valkey

import (
	"context"
	"crypto/tls"
	"errors"
	"maps"
	"net"
	"slices"
	"strings"

	"github.com/valkey-io/valkey-go"

	"github.com/goredlock/goredlock/internal/dialcount"
	"github.com/goredlock/goredlock/keyserver/redis"
	"github.com/goredlock/goredlock/keyserver/redis/adapt"
)

// New returns a key server over client, named after the nodes the client
// knows unless [redis.WithName] says otherwise. The caller keeps ownership of
// client: close the server first, then the client.
func New(client valkey.Client, opts ...redis.Option) *redis.Server {
	return redis.NewServer(adapt.Detach(&transport{client: client}), opts...)
}

// FromOption makes a valkey-go client with opt and returns a key server
// over it, named as [New]'s, which owns the client: Close closes it. Unlike
// New's server it counts the client's connections (it wraps
// opt.DialCtxFn), so that it reads its server's INFO again only after a new
// connection (see [redis.ConnectionCounter]): an uncontended lock then costs
// four commands, as on FromURL's servers, where over New's it costs five.
// The connections of a Cluster client are not counted: which node INFO
// reaches is the client's choice.
func FromOption(opt valkey.ClientOption, opts ...redis.Option) (*redis.Server, error) {
	opened := new(dialcount.Count)
	dialCtx, dial := opt.DialCtxFn, opt.DialFn
	opt.DialCtxFn = func(ctx context.Context, dst string, d *net.Dialer, cfg *tls.Config) (conn net.Conn, err error) {
		switch { // as valkey-go dials when neither is set
		case dialCtx != nil:
			conn, err = dialCtx(ctx, dst, d, cfg)
		case dial != nil:
			conn, err = dial(dst, d, cfg)
		case cfg != nil:
			conn, err = (&tls.Dialer{NetDialer: d, Config: cfg}).DialContext(ctx, "tcp", dst)
		default:
			conn, err = d.DialContext(ctx, "tcp", dst)
		}
		opened.Dialed(err)
		return conn, err
	}
	client, err := valkey.NewClient(opt)
	if err != nil {
		return nil, err
	}
	t := &transport{client: client, own: true}
	if client.Mode() != valkey.ClientModeCluster {
		t.Count = opened
	}
	return redis.NewServer(adapt.Detach(t), opts...), nil
}

// transport is a redis.Transport over a valkey-go client. Its Count,
// for a client FromOption made that is not a Cluster's, is the count of
// the client's connections (redis.ConnectionCounter); nil for the others.
type transport struct {
	client valkey.Client
	own    bool // made by FromOption: Close closes it
	*dialcount.Count
}

// Do builds the command from its words, keys marked for Cluster routing.
func (t *transport) Do(ctx context.Context, cmd, keys []string, args ...string) (any, error) {
	built := t.client.B().Arbitrary(cmd...).Keys(keys...).Args(args...).Build()
	v, err := t.client.Do(ctx, built).ToAny()
	if valkey.IsValkeyNil(err) {
		err = nil // an absent key: v is nil
	}
	return v, err
}

// ReplyText finds a Valkey error reply in err's chain.
func (*transport) ReplyText(err error) (string, bool) {
	var e *valkey.ValkeyError
	ok := errors.As(err, &e) && !e.IsNil()
	if !ok {
		return "", false
	}
	return e.Error(), true
}

// PubSub dedicates a connection to the subscriber; its hooks feed h.
func (t *transport) PubSub(_ context.Context, h redis.PubSubHandler) (redis.PubSub, error) {
	conn, release := t.client.Dedicate()
	hooks := valkey.PubSubHooks{
		OnMessage:      func(m valkey.PubSubMessage) { h.Message(m.Channel, m.Message) },
		OnSubscription: func(s valkey.PubSubSubscription) { adapt.Confirm(h, s.Kind, s.Channel) },
	}
	do := func(ctx context.Context, cmd valkey.Completed) error { return conn.Do(ctx, cmd).Error() }
	return adapt.HookedPubSub(h, conn.SetPubSubHooks(hooks), adapt.Send{
		Subscribe:   func(ctx context.Context, ch string) error { return do(ctx, conn.B().Subscribe().Channel(ch).Build()) },
		Unsubscribe: func(ctx context.Context, ch string) error { return do(ctx, conn.B().Unsubscribe().Channel(ch).Build()) },
	}, func() {
		conn.Close()
		release()
	}), nil
}

// Close closes the client FromOption made, and leaves a caller's open.
func (t *transport) Close() error {
	if t.own {
		t.client.Close()
	}
	return nil
}

// String lists the addresses of the nodes the client knows, which carry
// no credentials: the server's default name.
func (t *transport) String() string {
	return strings.Join(slices.Sorted(maps.Keys(t.client.Nodes())), ",")
}
