package main

import (
	"context"

	"github.com/goredlock/goredlock/redlock"
)

// The primitives beside the lock, on the same nodes and the same key
// server (FromURL): what a permit, a read hold and a write hold cost
// against a lock's grant. The semaphore has one permit, so that its
// contended workloads contend as a lock's do; readers never contend.

func primitivePeers() []peer {
	return []peer{
		primitivePeer("goredlock-permit", "a permit of Client.Semaphore(name, 1)", func(c *redlock.Client, ctx context.Context, name string, s settings) (*redlock.Lock, error) {
			return c.Semaphore(name, 1).Acquire(ctx, s.ttl)
		}),
		primitivePeer("goredlock-read", "a read hold of Client.RWMutex(name) (RLock)", func(c *redlock.Client, ctx context.Context, name string, s settings) (*redlock.Lock, error) {
			return c.RWMutex(name).RLock(ctx, s.ttl)
		}),
		primitivePeer("goredlock-write", "a write hold of Client.RWMutex(name) (Lock)", func(c *redlock.Client, ctx context.Context, name string, s settings) (*redlock.Lock, error) {
			return c.RWMutex(name).Lock(ctx, s.ttl)
		}),
	}
}

// primitivePeer is goredlock with default options over FromURL servers,
// taking its holds with take.
func primitivePeer(name, what string, take func(*redlock.Client, context.Context, string, settings) (*redlock.Lock, error)) peer {
	return peer{
		name:  name,
		extra: true,
		about: "redlock.New over keyserver/redis.FromURL servers, default options; each grant is " + what + ".",
		skip:  runsAlways,
		open: func(addrs []string, s settings) (locker, error) {
			l, err := openGoredlock(addrs, s, fromURL)
			if err != nil {
				return nil, err
			}
			return primitive{l.(*goredlock), take}, nil
		},
	}
}

// primitive is a goredlock locker whose holds are a primitive's.
type primitive struct {
	*goredlock
	take func(*redlock.Client, context.Context, string, settings) (*redlock.Lock, error)
}

func (p primitive) lock(ctx context.Context, name string) (func(context.Context) error, error) {
	l, err := p.take(p.client, ctx, name, p.s)
	if err != nil {
		return nil, err
	}
	return l.Release, nil
}
