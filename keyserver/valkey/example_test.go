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
