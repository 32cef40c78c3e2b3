package main

import (
	"context"
	"time"

	redigo "github.com/gomodule/redigo/redis"
)

// poolSize is the connections per node of the redigo-based peers: as many
// idle as active, so that 64 goroutines never make a pool close and redial
// connections. (keyserver/redis.FromURL keeps 16 idle of 64: goredlock runs
// with its defaults, and the notes under the tables show what its pools
// redial.)
const poolSize = 64

// newPool returns the redigo pool of one node for redsync and the floor.
func newPool(addr string) *redigo.Pool {
	return &redigo.Pool{
		DialContext: func(ctx context.Context) (redigo.Conn, error) {
			return redigo.DialContext(ctx, "tcp", addr,
				redigo.DialConnectTimeout(5*time.Second),
				redigo.DialReadTimeout(10*time.Second),
				redigo.DialWriteTimeout(10*time.Second))
		},
		MaxIdle:     poolSize,
		MaxActive:   poolSize,
		Wait:        true,
		IdleTimeout: 4 * time.Minute,
	}
}
