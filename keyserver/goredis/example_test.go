package goredis_test

import (
	"context"
	"log"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/goredlock/goredlock/keyserver"
	goredisks "github.com/goredlock/goredlock/keyserver/goredis"
	"github.com/goredlock/goredlock/keyserver/redis"
	"github.com/goredlock/goredlock/redlock"
)

// A lock on three independent Redis masters, through the go-redis clients
// the service already has (with their hooks: tracing, metrics).
func Example() {
	var servers []keyserver.KeyServer
	for _, addr := range []string{"10.0.0.1:6379", "10.0.0.2:6379", "10.0.0.3:6379"} {
		rdb := goredis.NewClient(&goredis.Options{Addr: addr, ContextTimeoutEnabled: true})
		defer rdb.Close()
		s := goredisks.New(rdb) // errors name it by its address
		defer s.Close()         // runs before rdb.Close: waits for commands in flight
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

// One key server over a go-redis client the service already has: its
// pool, hooks and options serve the locks too. ContextTimeoutEnabled lets
// a call that times out end its command at once (see the package doc).
func ExampleNew() {
	rdb := goredis.NewClient(&goredis.Options{Addr: "10.0.0.1:6379", ContextTimeoutEnabled: true})
	defer rdb.Close()
	srv := goredisks.New(rdb) // named "10.0.0.1:6379" in errors
	defer srv.Close()         // before rdb.Close: waits for the calls in flight

	client, err := redlock.New([]keyserver.KeyServer{srv}) // one of 3 or 5 in production
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
	lock, err := client.Acquire(context.Background(), "invoices", 10*time.Second)
	if err != nil {
		log.Fatal(err)
	}
	defer lock.Release(context.Background())
}

// A Sentinel-managed master or a Cluster is one key server: Redlock's
// independent servers are whole deployments, not their nodes.
func ExampleNew_sentinel() {
	rdb := goredis.NewFailoverClient(&goredis.FailoverOptions{
		MasterName:    "locks",
		SentinelAddrs: []string{"10.0.1.1:26379", "10.0.1.2:26379", "10.0.1.3:26379"},
	})
	defer rdb.Close()
	s := goredisks.New(rdb, redis.WithName("locks-eu"))
	defer s.Close()
	_ = s // one of the servers given to redlock.New
}
