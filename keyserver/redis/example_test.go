package redis_test

import (
	"context"
	"log"
	"time"

	redigo "github.com/gomodule/redigo/redis"

	"github.com/goredlock/goredlock/keyserver"
	"github.com/goredlock/goredlock/keyserver/redis"
	"github.com/goredlock/goredlock/redlock"
)

// A production setup: three independent Redis masters, one Server each. A
// password goes in the user info, percent-encoded (url.UserPassword does
// it); the query may bound the connection's own timeouts.
func ExampleFromURL() {
	var servers []keyserver.KeyServer
	for _, u := range []string{
		"redis://10.0.0.1:6379",
		"redis://10.0.0.2:6379",
		"redis://10.0.0.3:6379?dial_timeout=2s",
	} {
		s, err := redis.FromURL(u)
		if err != nil {
			log.Fatal(err) // never holds the password
		}
		defer s.Close()
		servers = append(servers, s)
	}
	client, err := redlock.New(servers)
	if err != nil {
		log.Fatal(err)
	}
	err = client.Do(context.Background(), "nightly-report", 30*time.Second, func(ctx context.Context) error {
		return nil // the job: the lock is extended while it runs, ctx ends if it is lost
	})
	if err != nil {
		log.Fatal(err)
	}
}

// A program that already has a redigo pool for a master can lend it to a
// Server; the Server never closes it.
func ExampleNew() {
	pool := &redigo.Pool{
		DialContext: func(ctx context.Context) (redigo.Conn, error) {
			return redigo.DialContext(ctx, "tcp", "10.0.0.1:6379")
		},
		MaxIdle:     8,
		IdleTimeout: 4 * time.Minute,
	}
	defer pool.Close()
	srv := redis.New(pool, redis.WithName("10.0.0.1:6379")) // the name in errors
	defer srv.Close()                                       // waits for calls in flight, before the pool closes

	client, err := redlock.New([]keyserver.KeyServer{srv})
	if err != nil {
		log.Fatal(err)
	}
	lock, err := client.Acquire(context.Background(), "invoices", 10*time.Second)
	if err != nil {
		log.Fatal(err)
	}
	defer lock.Release(context.Background())
}

// A waiter that was refused watches the key, and sleeps until the release
// or, when the holder crashed or publishes nothing, until the holder's key
// has expired. Watching before the attempt misses no release in between.
func ExampleServer_Watch() {
	srv, err := redis.FromURL("redis://10.0.0.1:6379")
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	ctx := context.Background()
	for {
		released, stop, err := srv.Watch(ctx, "invoices")
		if err != nil {
			log.Fatal(err)
		}
		ok, holder, err := srv.AcquireOrHolder(ctx, "invoices", "my-token", 10*time.Second)
		if err != nil || ok {
			stop()
			return // granted (or failed)
		}
		left := holder.Left
		if left == 0 {
			left = 200 * time.Millisecond // a key without a TTL: poll
		}
		t := time.NewTimer(left)
		select {
		case <-released: // released, or the connection broke: try again
		case <-t.C: // expired without a release
		}
		t.Stop()
		stop()
	}
}
