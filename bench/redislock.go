package main

import (
	"context"
	"fmt"

	"github.com/bsm/redislock"
	goredis "github.com/redis/go-redis/v9"
)

func redislockPeer() peer {
	return peer{
		name:  "redislock",
		about: "bsm/redislock over a go-redis v9 client (default pool), RetryStrategy LinearBackoff(-retry): its default is not to retry. One node only.",
		skip: func(n int, _ workload) string {
			if n != 1 {
				return "single-node only"
			}
			return ""
		},
		open: func(addrs []string, s settings) (locker, error) {
			c := goredis.NewClient(&goredis.Options{Addr: addrs[0]})
			return &redislockLocker{rc: c, c: redislock.New(c), opt: &redislock.Options{RetryStrategy: redislock.LinearBackoff(s.retry)}, s: s}, nil
		},
	}
}

type redislockLocker struct {
	rc  *goredis.Client
	c   *redislock.Client
	opt *redislock.Options
	s   settings
}

// lock bounds each Obtain by the TTL, as Obtain itself does when ctx has no
// deadline, so that a waiter gives up and starts over like the others.
func (r *redislockLocker) lock(ctx context.Context, name string) (func(context.Context) error, error) {
	ctx, cancel := context.WithTimeout(ctx, r.s.ttl)
	defer cancel()
	l, err := r.c.Obtain(ctx, name, r.s.ttl, r.opt)
	if err != nil {
		return nil, fmt.Errorf("redislock: %w", err)
	}
	return l.Release, nil
}

func (r *redislockLocker) close() error { return r.rc.Close() }
