// Package rueidis runs the Redis key server (keyserver/redis) over a
// rueidis (github.com/redis/rueidis) client, for services that already
// talk to Redis through rueidis and want their locks on the same
// auto-pipelined connections and hooks:
//
//	var servers []keyserver.KeyServer
//	for _, c := range []rueidis.Client{c1, c2, c3} { // three independent masters
//		s := rueidisks.New(c)
//		defer s.Close() // before c.Close: waits for calls still in flight
//		servers = append(servers, s)
//	}
//	client, err := redlock.New(servers)
//
// The package has the name of its directory, like keyserver/redis; as the
// rueidis client's own package is named rueidis too, import this one under
// another name (the examples use rueidisks: "rueidis key server").
//
// Any rueidis.Client will do, and each counts as ONE key server: a single
// node, a Sentinel-managed master (ClientOption.Sentinel) or a Redis Cluster
// (rueidis finds out by itself). Sentinel and Cluster replicate
// asynchronously, so a failover can lose a key that was just written: that
// is one server forgetting a lock, which Redlock tolerates only in a
// minority of its servers. For a lock that survives failovers, give
// redlock.New several independent deployments, not one deployment's nodes.
//
// This package is only the transport: the scripts, the waiting line, the
// fencing counters and the classification of errors are keyserver/redis's,
// the same for every Redis client, and so are the keys. The subscriber
// runs on one dedicated connection.
//
// rueidis bounds a command by the context's deadline, but not always by
// its cancellation, nor the reconnection that may come before it (on a
// paused node, a call after a broken connection waited 5 seconds for
// rueidis to reconnect, past its 200ms deadline), so every call runs
// detached ([adapt.Detach]): it returns when its context ends, and Close
// waits for what is still running.
package rueidis

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"sort"
	"strings"

	"github.com/redis/rueidis"

	"github.com/goredlock/goredlock/internal/dialcount"
	"github.com/goredlock/goredlock/keyserver/redis"
	"github.com/goredlock/goredlock/keyserver/redis/adapt"
)

// New returns a key server over client, named after the nodes the client
// knows unless [redis.WithName] says otherwise. The caller keeps ownership of
// client: close the server first, which waits for the calls still in
// flight, then the client.
func New(client rueidis.Client, opts ...redis.Option) *redis.Server {
	return redis.NewServer(adapt.Detach(transport{c: client}), opts...)
}

// FromOption makes a rueidis client with opt and returns a key server over
// it, named as [New]'s, which owns the client: Close closes it. Unlike New's
// server it counts the client's connections (it wraps opt.DialFn), so that
// it reads its Redis's INFO again only after a new connection (see
// [redis.ConnectionCounter]): an uncontended lock then costs Redis four
// commands, as on FromURL's servers, where over New's it costs five. The
// connections of a Cluster client are not counted: which node INFO reaches
// is the client's choice.
func FromOption(opt rueidis.ClientOption, opts ...redis.Option) (*redis.Server, error) {
	opened := new(dialcount.Count)
	dial := opt.DialFn
	opt.DialFn = func(dst string, d *net.Dialer, cfg *tls.Config) (conn net.Conn, err error) {
		switch { // as rueidis dials when DialFn is nil
		case dial != nil:
			conn, err = dial(dst, d, cfg)
		case cfg != nil:
			conn, err = tls.DialWithDialer(d, "tcp", dst, cfg)
		default:
			conn, err = d.Dial("tcp", dst)
		}
		opened.Dialed(err)
		return conn, err
	}
	client, err := rueidis.NewClient(opt)
	if err != nil {
		return nil, err
	}
	t := transport{c: client, own: true}
	if !clustered(client) {
		t.Count = opened
	}
	return redis.NewServer(adapt.Detach(t), opts...), nil
}

// clustered reports whether client is a Cluster client, by its type: this
// rueidis tells no mode. An unknown type counts as one, whose connections
// are then not counted.
func clustered(client rueidis.Client) bool {
	switch fmt.Sprintf("%T", client) {
	case "*rueidis.singleClient", "*rueidis.sentinelClient":
		return false
	}
	return true
}

// transport is a redis.Transport over a rueidis client. Its Count,
// for a client FromOption made that is not a Cluster's, is the count of
// the client's connections (redis.ConnectionCounter); nil for the others.
type transport struct {
	c   rueidis.Client
	own bool // made by FromOption: Close closes it
	*dialcount.Count
}

// Do runs one command; rueidis routes it in a Cluster by its keys.
func (t transport) Do(ctx context.Context, cmd, keys []string, args ...string) (any, error) {
	reply, err := t.c.Do(ctx, t.c.B().Arbitrary(cmd...).Keys(keys...).Args(args...).Build()).ToAny()
	if rueidis.IsRedisNil(err) {
		return nil, nil
	}
	return reply, err
}

// ReplyText reads a rueidis error reply, also wrapped (rueidis.IsRedisErr
// would not unwrap it).
func (transport) ReplyText(err error) (string, bool) {
	var reply *rueidis.RedisError
	if errors.As(err, &reply) && !reply.IsNil() {
		return reply.Error(), true
	}
	return "", false
}

// PubSub takes a dedicated connection whose Pub/Sub hooks feed h.
func (t transport) PubSub(_ context.Context, h redis.PubSubHandler) (redis.PubSub, error) {
	dc, give := t.c.Dedicate()
	ends := dc.SetPubSubHooks(rueidis.PubSubHooks{
		OnMessage:      func(m rueidis.PubSubMessage) { h.Message(m.Channel, m.Message) },
		OnSubscription: func(s rueidis.PubSubSubscription) { adapt.Confirm(h, s.Kind, s.Channel) },
	})
	send := adapt.Send{
		Subscribe: func(ctx context.Context, ch string) error {
			return dc.Do(ctx, dc.B().Subscribe().Channel(ch).Build()).Error()
		},
		Unsubscribe: func(ctx context.Context, ch string) error {
			return dc.Do(ctx, dc.B().Unsubscribe().Channel(ch).Build()).Error()
		},
	}
	return adapt.HookedPubSub(h, ends, send, func() { dc.Close(); give() }), nil
}

// Close closes the client FromOption made, and leaves a caller's open.
func (t transport) Close() error {
	if t.own {
		t.c.Close()
	}
	return nil
}

// String names the server after the nodes the client knows: their
// addresses, sorted, which carry no credentials.
func (t transport) String() string {
	nodes := t.c.Nodes()
	addrs := make([]string, 0, len(nodes))
	for addr := range nodes {
		addrs = append(addrs, addr)
	}
	sort.Strings(addrs)
	return strings.Join(addrs, ",")
}
