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

// A waiter that was refused waits its turn in the key's line: a release
// promises the key to the earliest waiter and tells only that one. Tokens
// that carry a rank (the time their call began) line up; the redlock client
// draws such tokens.
func ExampleServer_WatchTurn() {
	srv := memory.New()
	defer srv.Close()
	ctx := context.Background()
	holder := "0000019a2b3c4d5e.0123456789abcdef0123456789abcdef"
	waiter := "0000019a2b3c4d5f.0000000089abcdef0123456789abcdef"
	srv.Acquire(ctx, "report", holder, time.Minute)

	ok, h, _ := srv.AcquireInLine(ctx, "report", waiter, time.Minute, "")
	fmt.Println("granted:", ok, "holder's TTL under a minute:", h.Left > 0 && h.Left <= time.Minute)
	turn, stop, _ := srv.WatchTurn(ctx, "report", waiter)
	defer stop()

	srv.Release(ctx, "report", holder) // the holder, elsewhere, is done
	select {
	case <-turn:
		ok, _, _ = srv.AcquireInLine(ctx, "report", waiter, time.Minute, "")
		fmt.Println("its turn; granted:", ok)
	case <-time.After(h.Left):
		fmt.Println("the holder's key expired")
	}
	// Output:
	// granted: false holder's TTL under a minute: true
	// its turn; granted: true
}
