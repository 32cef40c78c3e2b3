package goredis_test

import (
	"context"
	"log"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/goredlock/goredlock/keyserver"
	"github.com/goredlock/goredlock/keyserver/goredis"
	"github.com/goredlock/goredlock/redlock"
)

// A lock on three independent Redis masters, through the go-redis clients
// the service already has (with their hooks: tracing, metrics).
func Example() {
	var servers []keyserver.KeyServer
	for _, addr := range []string{"10.0.0.1:6379", "10.0.0.2:6379", "10.0.0.3:6379"} {
		rdb := redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: true})
		defer rdb.Close()
		s := goredis.New(rdb) // errors name it by its address
		defer s.Close()       // runs before rdb.Close: waits for commands in flight
		servers = append(servers, s)
	}
	client, err := redlock.New(servers)
	if err != nil {
		log.Fatal(err)
	}
	err = client.Do(context.Background(), "nightly-report", 30*time.Second, func(ctx context.Context) error {
		return nil // the work; ctx ends if the lock is lost
	})
	if err != nil {
		log.Fatal(err)
	}
}

// A Sentinel-managed master or a Cluster is one key server: Redlock's
// independent servers are whole deployments, not their nodes.
func ExampleNew_sentinel() {
	rdb := redis.NewFailoverClient(&redis.FailoverOptions{
		MasterName:    "locks",
		SentinelAddrs: []string{"10.0.1.1:26379", "10.0.1.2:26379", "10.0.1.3:26379"},
	})
	defer rdb.Close()
	s := goredis.New(rdb, goredis.WithName("locks-eu"))
	defer s.Close()
	_ = s // one of the servers given to redlock.New
}

// A waiter that was refused watches the key, and sleeps until the release
// or, when the holder crashed or publishes nothing, until the holder's key
// has expired. Watching before the attempt misses no release in between.
// redlock does this itself for a Notifier; this is the one-server view.
func ExampleServer_Watch() {
	rdb := redis.NewClient(&redis.Options{Addr: "10.0.0.1:6379"})
	defer rdb.Close()
	srv := goredis.New(rdb)
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
