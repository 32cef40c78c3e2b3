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

// A waiter that was refused watches the key and sleeps until the holder
// releases it, or until the holder's TTL has run out, whichever comes
// first.
func ExampleServer_Watch() {
	srv := memory.New()
	defer srv.Close()
	ctx := context.Background()
	srv.Acquire(ctx, "report", "holder", time.Minute)

	// Watch before trying, so that a release in between is not missed.
	released, stop, _ := srv.Watch(ctx, "report")
	defer stop()
	ok, holder, _ := srv.AcquireOrHolder(ctx, "report", "waiter", time.Minute)
	fmt.Println("granted:", ok, "holder's TTL under a minute:", holder.Left > 0 && holder.Left <= time.Minute)

	srv.Release(ctx, "report", "holder") // the holder, elsewhere, is done
	select {
	case <-released:
		ok, _, _ = srv.AcquireOrHolder(ctx, "report", "waiter", time.Minute)
		fmt.Println("woken; granted:", ok)
	case <-time.After(holder.Left):
		fmt.Println("the holder's key expired")
	}
	// Output:
	// granted: false holder's TTL under a minute: true
	// woken; granted: true
}
