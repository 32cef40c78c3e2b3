package redis_test

import (
	"context"
	"log"
	"time"

	redigo "github.com/gomodule/redigo/redis"

	"github.com/goredlock/goredlock/keyserver"
	"github.com/goredlock/goredlock/keyserver/redis"
	"github.com/goredlock/goredlock/keyserver/redis/adapt"
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

// A pool whose dials are counted before its first use spares every lock a
// read of INFO: the Server then knows its Redis cannot have restarted while
// no new connection was made.
func ExampleCountDials() {
	pool := &redigo.Pool{
		DialContext: func(ctx context.Context) (redigo.Conn, error) {
			return redigo.DialContext(ctx, "tcp", "10.0.0.1:6379")
		},
		MaxIdle: 8,
	}
	defer pool.Close()
	srv := redis.New(redis.CountDials(pool), redis.WithName("10.0.0.1:6379"))
	defer srv.Close()
	_ = srv // one of the servers given to redlock.New
}

// A transport for a Redis client this module does not ship is a few
// methods (see Transport); NewServer puts the lock logic on top.
func ExampleNewServer() {
	var t redis.Transport = myTransport() // Do, ReplyText, PubSub, Close
	srv := redis.NewServer(adapt.Detach(t), redis.WithName("10.0.0.1:6379"))
	defer srv.Close() // closes t
	_ = srv           // one of the servers given to redlock.New
}

// myTransport stands for a Transport over another Redis client.
func myTransport() redis.Transport { return nil }

// A waiter that was refused by one server waits its turn in the key's
// line: a release promises the key to the earliest waiter and tells it,
// and its next AcquireInLine claims it. The redlock client does this for
// every Notifier; this is the one-server view.
func ExampleServer_WatchTurn() {
	srv, err := redis.FromURL("redis://10.0.0.1:6379")
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	ctx := context.Background()
	// A token carries the rank of its call (see layout.RankOf): its
	// place in line, the same for every attempt of the call.
	token := "0000019a2b3c4d00.0000000100000000000000000000000a"
	for {
		ok, holder, err := srv.AcquireInLine(ctx, "invoices", token, 10*time.Second, "")
		if err != nil || ok {
			return // granted (or failed)
		}
		turn, stop, err := srv.WatchTurn(ctx, "invoices", token)
		if err != nil {
			log.Fatal(err)
		}
		t := time.NewTimer(min(holder.Left, keyserver.LineTTL/3)) // expiry, or renewing the place in line
		select {
		case <-turn: // promised to us (or the connection broke): try again
		case <-t.C:
		}
		t.Stop()
		stop()
	}
}

// At start-up a program can check its servers as redlock doctor does, and
// refuse to run on one that is unusable or unsafe (a replica, a policy
// that evicts lock keys, one store named twice, unreachable).
func ExampleDiagnose() {
	var servers []*redis.Server
	for _, u := range []string{"redis://10.0.0.1:6379", "redis://10.0.0.2:6379", "redis://10.0.0.3:6379"} {
		s, err := redis.FromURL(u)
		if err != nil {
			log.Fatal(err)
		}
		defer s.Close()
		servers = append(servers, s)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, d := range redis.Diagnose(ctx, servers...) {
		for _, f := range d.Features {
			if f.Support != "works" {
				log.Printf("%s: %s %s: %s", d.Server, f.Name, f.Support, f.Detail)
			}
		}
		if len(d.Problems) > 0 {
			log.Fatalf("%s: %v", d.Server, d.Problems)
		}
	}
}
