package main

import (
	goredisclient "github.com/redis/go-redis/v9"
	rueidisclient "github.com/redis/rueidis"
	valkeyclient "github.com/valkey-io/valkey-go"

	"github.com/goredlock/goredlock/keyserver/goredis"
	"github.com/goredlock/goredlock/keyserver/redis"
	"github.com/goredlock/goredlock/keyserver/rueidis"
	"github.com/goredlock/goredlock/keyserver/valkey"
)

// The Redis key server over the other clients it ships transports for, so
// that the uncontended figures (Redis commands per lock above all) are
// measured for each transport and not only for FromURL's redigo
// connections. The contended workloads are FromURL's alone: the waiting
// line is the same server-side code whatever the transport.

func transportPeers() []peer {
	return []peer{
		transportPeer("goredlock-pool", "keyserver/redis.New over a caller's redigo pool per node (the pool redsync gets)", func(addr string) (*redis.Server, func() error, error) {
			p := newPool(addr)
			return redis.New(p), p.Close, nil
		}),
		transportPeer("goredlock-pool-counted", "keyserver/redis.New over a caller's redigo pool per node, its dials counted (redis.CountDials)", func(addr string) (*redis.Server, func() error, error) {
			p := newPool(addr)
			return redis.New(redis.CountDials(p)), p.Close, nil
		}),
		transportPeer("goredlock-pool-percall", "keyserver/redis.New with WithPooledConnections (a connection per call) over a caller's redigo pool per node", func(addr string) (*redis.Server, func() error, error) {
			p := newPool(addr)
			return redis.New(p, redis.WithPooledConnections()), p.Close, nil
		}),
		transportPeer("goredlock-goredis", "keyserver/goredis over a go-redis client per node", func(addr string) (*redis.Server, func() error, error) {
			c := goredisclient.NewClient(&goredisclient.Options{Addr: addr})
			return goredis.New(c), c.Close, nil
		}),
		transportPeer("goredlock-rueidis", "keyserver/rueidis.FromOption, a rueidis client per node", func(addr string) (*redis.Server, func() error, error) {
			s, err := rueidis.FromOption(rueidisclient.ClientOption{InitAddress: []string{addr}})
			return s, noClose, err // the server closes its client
		}),
		transportPeer("goredlock-valkey", "keyserver/valkey.FromOption, a valkey-go client per node", func(addr string) (*redis.Server, func() error, error) {
			s, err := valkey.FromOption(valkeyclient.ClientOption{InitAddress: []string{addr}})
			return s, noClose, err
		}),
	}
}

// transportPeer is goredlock with default options over the key servers
// that newServer makes, on the uncontended workloads.
func transportPeer(name, about string, newServer newServer) peer {
	return peer{
		name:  name,
		extra: true,
		about: "redlock.New over " + about + ", default options; uncontended workloads only.",
		skip: func(_ int, w workload) string {
			if w.contended() {
				return "the line is the same Redis scripts over every transport: see goredlock"
			}
			return ""
		},
		open: func(addrs []string, s settings) (locker, error) {
			return openGoredlock(addrs, s, newServer)
		},
	}
}

// noClose is the close of a server that owns its client.
func noClose() error { return nil }
