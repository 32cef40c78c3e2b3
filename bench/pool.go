package main

import (
	"context"
	"time"

	redigo "github.com/gomodule/redigo/redis"
)

// newPool returns a redigo pool tuned as keyserver/redis.FromURL tunes its
// own (16 idle, 64 active, waiting for a free connection), so that the
// redigo-based peers differ from goredlock only in what they send.
func newPool(addr string) *redigo.Pool {
	return &redigo.Pool{
		DialContext: func(ctx context.Context) (redigo.Conn, error) {
			return redigo.DialContext(ctx, "tcp", addr,
				redigo.DialConnectTimeout(5*time.Second),
				redigo.DialReadTimeout(10*time.Second),
				redigo.DialWriteTimeout(10*time.Second))
		},
		MaxIdle:     16,
		MaxActive:   64,
		Wait:        true,
		IdleTimeout: 4 * time.Minute,
	}
}
