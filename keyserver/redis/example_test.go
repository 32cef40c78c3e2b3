package redis_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	redigo "github.com/gomodule/redigo/redis"

	"github.com/goredlock/goredlock/keyserver"
	"github.com/goredlock/goredlock/keyserver/redis"
	"github.com/goredlock/goredlock/redlock"
)

// Three independent Redis masters, one pipelined Server each.
func ExampleFromURL() {
	var servers []keyserver.KeyServer
	for _, u := range []string{"redis://10.0.0.1:6379", "redis://:s3cret@10.0.0.2:6379/2", "rediss://10.0.0.3:6380"} {
		s, err := redis.FromURL(u)
		if err != nil {
			fmt.Println(err) // a malformed URL: nothing is dialled before the first call
			return
		}
		defer s.Close()
		servers = append(servers, s)
	}
	client, err := redlock.New(servers)
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx := context.Background()
	lock, err := client.Acquire(ctx, "nightly-report", 30*time.Second)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer lock.Release(ctx) //nolint:errcheck // the keys expire with their TTL anyway
	// ... exclusive work, before lock.Until() ...
}

// A Server over a pool the caller owns, one connection per call.
func ExampleNew() {
	pool := &redigo.Pool{
		DialContext: func(ctx context.Context) (redigo.Conn, error) {
			return redigo.DialContext(ctx, "tcp", "10.0.0.1:6379")
		},
		MaxActive: 16,
		Wait:      true,
	}
	defer pool.Close()
	s := redis.New(pool, redis.WithName("redis-a"))
	defer s.Close() // waits for its calls; the pool stays open
	_ = s
}

// Telling a failure that retrying cannot fix from an outage.
func ExampleIsPermanent() {
	s, err := redis.FromURL("redis://10.0.0.1:6379")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err = s.Acquire(ctx, "jobs", "token", 10*time.Second)
	switch {
	case err == nil:
	case redis.IsPermanent(err): // e.g. "jobs" holds a list: WRONGTYPE
		fmt.Println("fix the configuration:", err)
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, redis.ErrConnectionLost):
		fmt.Println("try again later:", err)
	}
}
