package rueidis_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/redis/rueidis"

	"github.com/goredlock/goredlock/keyserver"
	"github.com/goredlock/goredlock/keyserver/redis"
	rueidisks "github.com/goredlock/goredlock/keyserver/rueidis"
	"github.com/goredlock/goredlock/redlock"
)

// A Redis Cluster through rueidis is ONE key server: give redlock.New
// several independent deployments for a lock that survives failovers. The
// server shares the client's auto-pipelined connections.
func Example() {
	c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{"10.0.1.1:7000", "10.0.1.2:7000"}})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	srv := rueidisks.New(c, redis.WithName("orders-cluster")) // how errors name it
	defer srv.Close()                                         // first: waits for the calls in flight

	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	ok, holder, err := srv.AcquireOrHolder(ctx, "{orders}:export", "my-token", 30*time.Second)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(ok, holder.Left)
}

// One key server over a rueidis client the service already has: the locks
// share its auto-pipelined connections. The caller keeps the client.
func ExampleNew() {
	c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{"10.0.0.1:6379"}})
	if err != nil {
		log.Fatal(err) // rueidis connects at once
	}
	defer c.Close()
	srv := rueidisks.New(c) // named after the node in errors
	defer srv.Close()       // before c.Close: waits for the calls in flight

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

// A server that makes its rueidis client, and owns it, counts the
// client's connections: an uncontended lock costs each Redis four
// commands, as with keyserver/redis.FromURL.
func ExampleFromOption() {
	srv, err := rueidisks.FromOption(rueidis.ClientOption{InitAddress: []string{"10.0.0.1:6379"}})
	if err != nil {
		log.Fatal(err) // rueidis connects at once: an unreachable node or a wrong password
	}
	defer srv.Close() // closes the client too

	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	ok, err := srv.Acquire(ctx, "export", "my-token", 30*time.Second)
	fmt.Println(ok, err)
}
