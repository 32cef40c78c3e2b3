package rueidis_test

import (
	"context"
	"log"
	"time"

	"github.com/redis/rueidis"

	"github.com/goredlock/goredlock/keyserver"
	rueidisks "github.com/goredlock/goredlock/keyserver/rueidis"
	"github.com/goredlock/goredlock/redlock"
)

// A lock on three independent Redis masters, through the rueidis clients
// the service already has.
func Example() {
	var servers []keyserver.KeyServer
	for _, addr := range []string{"10.0.0.1:6379", "10.0.0.2:6379", "10.0.0.3:6379"} {
		c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}})
		if err != nil {
			log.Fatal(err)
		}
		defer c.Close()
		s := rueidisks.New(c) // errors name it by its address
		defer s.Close()       // runs before c.Close: waits for commands in flight
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
