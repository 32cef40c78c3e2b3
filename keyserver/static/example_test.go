package static_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/goredlock/goredlock/keyserver/static"
	"github.com/goredlock/goredlock/redlock"
)

// runNightly is the code under test: it must do the job only when it holds
// the lock, and skip quietly when another host does.
func runNightly(ctx context.Context, c *redlock.Client) (bool, error) {
	return c.DoOrSkip(ctx, "nightly", time.Minute, func(context.Context) error { return nil })
}

func Example() {
	ctx := context.Background()

	// Two of three servers report the lock held by someone else.
	held := static.Table([][]bool{{false, false}, {false, false}, {true, true}})
	client, _ := redlock.New(held.KeyServers(), redlock.WithRetryCount(0))
	ran, err := runNightly(ctx, client)
	fmt.Println("held elsewhere: ran", ran, "err", err)

	// Two of three servers are down: that is an error, not a skip.
	down := static.NewCluster(3, static.WithAcquire(static.Fail(errors.New("connection refused"))))
	down[0].Script(static.OpAcquire, static.Grant)
	client, _ = redlock.New(down.KeyServers(), redlock.WithRetryCount(0))
	ran, err = runNightly(ctx, client)
	fmt.Println("servers down: ran", ran, "not acquired", errors.Is(err, redlock.ErrNotAcquired))

	// All servers grant: the job runs and the lock is released after.
	free := static.NewCluster(3)
	client, _ = redlock.New(free.KeyServers())
	ran, err = runNightly(ctx, client)
	fmt.Println("free: ran", ran, "err", err)
	// Output:
	// held elsewhere: ran false err <nil>
	// servers down: ran false not acquired true
	// free: ran true err <nil>
}

// A unit test of code that waits for a lock drives the wake-up by hand:
// Wake plays the turn a release by another process gives, Break a lost
// connection.
func ExampleServer_Wake() {
	srv := static.New(static.WithAcquire(static.Reply{Left: 30 * time.Second, Rank: -1}))
	ctx := context.Background()
	ok, holder, _ := srv.AcquireOrHolder(ctx, "nightly", "me", time.Minute)
	fmt.Println("granted:", ok, "holder's TTL:", holder.Left, "first:", holder.Rank == -1)

	turn, stop, _ := srv.WatchTurn(ctx, "nightly", "0000019a2b3c4d5e.0123456789abcdef0123456789abcdef")
	defer stop()
	fmt.Println("woken:", srv.Wake("nightly"))
	<-turn
	fmt.Println("still watching:", srv.Watching("nightly"))
	// Output:
	// granted: false holder's TTL: 30s first: true
	// woken: 1
	// still watching: 1
}

// A scripted server answers from its script, then (FromStore) from its own
// store, and logs every call: a test can script one failure, then check
// that the code under test retried and released what it took.
func ExampleNew() {
	srv := static.New(static.WithAcquire(static.Fail(errors.New("i/o timeout")), static.FromStore))
	ctx := context.Background()
	for try := 1; try <= 2; try++ {
		ok, err := srv.Acquire(ctx, "nightly", "token-1", time.Minute)
		fmt.Println("acquire", try, ok, err)
	}
	ok, err := srv.Release(ctx, "nightly", "token-1")
	fmt.Println("release", ok, err)

	for _, c := range srv.Calls() {
		fmt.Println(c.Op, c.Key, c.OK, c.Err)
	}
	// Output:
	// acquire 1 false i/o timeout
	// acquire 2 true <nil>
	// release true <nil>
	// acquire nightly false i/o timeout
	// acquire nightly true <nil>
	// release nightly true <nil>
}
