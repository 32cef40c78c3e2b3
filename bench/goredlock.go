package main

import (
	"context"
	"fmt"

	"github.com/goredlock/goredlock/keyserver"
	"github.com/goredlock/goredlock/keyserver/redis"
	"github.com/goredlock/goredlock/redlock"
)

func goredlockPeer() peer {
	return peer{
		name:  "goredlock",
		about: "redlock.New over keyserver/redis.FromURL servers, default options (10 retries, 200±100 ms; hand-over within a client 10 ms or 64 passes).",
		skip:  runsAlways,
		open: func(addrs []string, s settings) (locker, error) {
			return openGoredlock(addrs, s, fromURL)
		},
	}
}

func goredlockRetryPeer() peer {
	return peer{
		name:          "goredlock-retry",
		title:         func(s settings) string { return fmt.Sprintf("goredlock, retry %v", s.retry) },
		about:         "goredlock with redlock.WithRetryDelay(-retry) (so jitter ±half of it), contended workloads only.",
		uncontendedAs: "goredlock",
		skip: func(_ int, w workload) string {
			if !w.contended() {
				return "same as goredlock without contention"
			}
			return ""
		},
		open: func(addrs []string, s settings) (locker, error) {
			return openGoredlock(addrs, s, fromURL, redlock.WithRetryDelay(s.retry))
		},
	}
}

func goredlockNoHandOverPeer() peer {
	return peer{
		name:          "goredlock-nohandover",
		title:         func(settings) string { return "goredlock, hand-over off" },
		about:         "goredlock with redlock.WithHandOver(redlock.NoHandOver): every grant from the servers' line, none passed between the goroutines of a client; contended workloads only.",
		uncontendedAs: "goredlock",
		skip: func(_ int, w workload) string {
			if !w.contended() {
				return "same as goredlock without contention"
			}
			return ""
		},
		open: func(addrs []string, s settings) (locker, error) {
			return openGoredlock(addrs, s, fromURL, redlock.WithHandOver(redlock.NoHandOver))
		},
	}
}

type goredlock struct {
	client  *redlock.Client
	servers []*redis.Server
	clients []func() error // close the Redis clients beneath the servers
	s       settings
}

// newServer makes the key server of one node, and the call that closes
// the Redis client beneath it, if the server does not own it.
type newServer func(addr string) (*redis.Server, func() error, error)

// fromURL is the key server most users start with: redis.FromURL, pooled
// and auto-pipelined redigo connections that the server owns.
func fromURL(addr string) (*redis.Server, func() error, error) {
	srv, err := redis.FromURL("redis://" + addr)
	return srv, nil, err
}

func openGoredlock(addrs []string, s settings, newServer newServer, opts ...redlock.ClientOption) (locker, error) {
	g := &goredlock{s: s}
	var ks []keyserver.KeyServer
	for _, a := range addrs {
		srv, closeClient, err := newServer(a)
		if closeClient != nil {
			g.clients = append(g.clients, closeClient)
		}
		if err != nil {
			g.close() //nolint:errcheck // reporting the first error
			return nil, fmt.Errorf("goredlock: %w", err)
		}
		g.servers = append(g.servers, srv)
		ks = append(ks, srv)
	}
	c, err := redlock.New(ks, opts...)
	if err != nil {
		g.close() //nolint:errcheck // reporting the first error
		return nil, fmt.Errorf("goredlock: %w", err)
	}
	g.client = c
	return g, nil
}

func (g *goredlock) lock(ctx context.Context, name string) (func(context.Context) error, error) {
	l, err := g.client.Acquire(ctx, name, g.s.ttl)
	if err != nil {
		return nil, err
	}
	return l.Release, nil
}

// close closes the client, which waits for the calls it left running in
// the background, then the servers, then the Redis clients beneath them.
func (g *goredlock) close() error {
	var first error
	if g.client != nil {
		first = g.client.Close()
	}
	for _, srv := range g.servers {
		if err := srv.Close(); err != nil && first == nil {
			first = err
		}
	}
	for _, closeClient := range g.clients {
		if err := closeClient(); err != nil && first == nil {
			first = err
		}
	}
	return first
}
