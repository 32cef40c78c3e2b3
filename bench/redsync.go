package main

import (
	"context"

	"github.com/go-redsync/redsync/v4"
	redsyncredis "github.com/go-redsync/redsync/v4/redis"
	redsyncredigo "github.com/go-redsync/redsync/v4/redis/redigo"
	redigo "github.com/gomodule/redigo/redis"
)

func redsyncPeer() peer {
	return peer{
		name:  "redsync",
		about: "redsync v4 over redigo pools of 64 connections per node, defaults (32 tries, 50–250 ms) but WithExpiry(-ttl).",
		skip:  runsAlways,
		open: func(addrs []string, s settings) (locker, error) {
			r := &redsyncLocker{s: s}
			var pools []redsyncredis.Pool
			for _, a := range addrs {
				p := newPool(a)
				r.pools = append(r.pools, p)
				pools = append(pools, redsyncredigo.NewPool(p))
			}
			r.rs = redsync.New(pools...)
			return r, nil
		},
	}
}

type redsyncLocker struct {
	rs    *redsync.Redsync
	pools []*redigo.Pool
	s     settings
}

func (r *redsyncLocker) lock(ctx context.Context, name string) (func(context.Context) error, error) {
	m := r.rs.NewMutex(name, redsync.WithExpiry(r.s.ttl))
	if err := m.LockContext(ctx); err != nil {
		return nil, err
	}
	return func(ctx context.Context) error {
		ok, err := m.UnlockContext(ctx)
		if err == nil && !ok {
			err = errNotReleased
		}
		return err
	}, nil
}

func (r *redsyncLocker) close() error { return closePools(r.pools) }

func closePools(pools []*redigo.Pool) error {
	var first error
	for _, p := range pools {
		if err := p.Close(); err != nil && first == nil {
			first = err
		}
	}
	return first
}
