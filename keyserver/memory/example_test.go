package memory_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/goredlock/goredlock/keyserver"
	"github.com/goredlock/goredlock/keyserver/memory"
	"github.com/goredlock/goredlock/redlock"
)

// One process, no Redis yet: the locks exclude this process's goroutines
// from one another, and the code keeps working unchanged when the server
// list becomes three Redis masters.
func ExampleNew() {
	srv := memory.New()
	defer srv.Close()
	client, err := redlock.New([]keyserver.KeyServer{srv})
	if err != nil {
		log.Fatal(err)
	}

	ctx := context.Background()
	err = client.Do(ctx, "rebuild-index", 10*time.Second, func(ctx context.Context) error {
		_, err := client.TryAcquire(ctx, "rebuild-index", 10*time.Second)
		fmt.Println("another taker:", errors.Is(err, redlock.ErrNotAcquired))
		return nil
	})
	fmt.Println("done:", err)

	lock, err := client.TryAcquire(ctx, "rebuild-index", 10*time.Second)
	fmt.Println("free again:", err == nil)
	if err == nil {
		lock.Release(ctx)
	}
	// Output:
	// another taker: true
	// done: <nil>
	// free again: true
}
