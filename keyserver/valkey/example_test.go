package valkey_test

import (
	"context"
	"log"
	"time"

	"github.com/valkey-io/valkey-go"

	"github.com/goredlock/goredlock/keyserver"
	valkeyks "github.com/goredlock/goredlock/keyserver/valkey"
	"github.com/goredlock/goredlock/redlock"
)

// A lock on three independent Valkey (or Redis) masters, with the clients
// made from URLs. Close each server before its client: it waits for the
// commands still in flight.
func Example() {
	var servers []keyserver.KeyServer
	for _, u := range []string{"redis://10.0.0.1:6379", "redis://10.0.0.2:6379", "rediss://10.0.0.3:6380"} {
		c, err := valkey.NewClient(valkey.MustParseURL(u))
		if err != nil {
			log.Fatal(err)
		}
		s := valkeyks.New(c) // named after the node in errors
		defer func() {
			s.Close()
			c.Close()
		}()
		servers = append(servers, s)
	}
	client, err := redlock.New(servers)
	if err != nil {
		log.Fatal(err)
	}
	ran, err := client.DoOrSkip(context.Background(), "invoices", 10*time.Second, func(ctx context.Context) error {
		return nil // the work, unless another process does it now
	})
	log.Println(ran, err)
}

// One key server over a valkey-go client the service already has. The
// caller keeps the client: close the server first.
func ExampleNew() {
	c, err := valkey.NewClient(valkey.ClientOption{InitAddress: []string{"10.0.0.1:6379"}})
	if err != nil {
		log.Fatal(err) // valkey-go connects at once
	}
	defer c.Close()
	srv := valkeyks.New(c) // named after the node in errors
	defer srv.Close()      // before c.Close: waits for the calls in flight

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

// A server that makes its valkey-go client, and owns it, counts the
// client's connections: an uncontended lock costs each server four
// commands, as with keyserver/redis.FromURL.
func ExampleFromOption() {
	srv, err := valkeyks.FromOption(valkey.MustParseURL("redis://10.0.0.1:6379"))
	if err != nil {
		log.Fatal(err) // valkey-go connects at once: an unreachable node or a wrong password
	}
	defer srv.Close() // closes the client too

	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	ok, err := srv.Acquire(ctx, "export", "my-token", 30*time.Second)
	log.Println(ok, err)
}
