package redlock_test

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

// newClient returns a client over three in-process key servers; in
// production they would be three independent Redis masters.
func newClient(opts ...redlock.ClientOption) (*redlock.Client, func()) {
	var servers []keyserver.KeyServer
	for i := 0; i < 3; i++ {
		servers = append(servers, memory.New())
	}
	c, err := redlock.New(servers, opts...)
	if err != nil {
		log.Fatal(err)
	}
	return c, func() {
		c.Close() // first: it waits for what the client left running
		for _, s := range servers {
			s.(*memory.Server).Close()
		}
	}
}

func ExampleClient_Acquire() {
	client, closeServers := newClient()
	defer closeServers()
	ctx := context.Background()

	lock, err := client.Acquire(ctx, "invoices", 10*time.Second)
	if err != nil {
		log.Fatal(err) // errors.Is(err, redlock.ErrNotAcquired): held elsewhere or servers down
	}
	fmt.Println("held:", lock.Name(), "valid for about", time.Until(lock.Until()).Round(time.Second))

	_, err = client.TryAcquire(ctx, "invoices", 10*time.Second)
	fmt.Println("second taker:", errors.Is(err, redlock.ErrHeldElsewhere))

	if err := lock.Release(ctx); err != nil {
		log.Fatal(err)
	}
	fmt.Println("after release:", lock.Err())
	// Output:
	// held: invoices valid for about 10s
	// second taker: true
	// after release: redlock: lock not held
}

func ExampleClient_Do() {
	client, closeServers := newClient()
	defer closeServers()

	// A short TTL, so that a crashed holder frees the lock soon; Do extends
	// it in the background for as long as the job runs.
	err := client.Do(context.Background(), "migration", 300*time.Millisecond, func(ctx context.Context) error {
		select {
		case <-time.After(time.Second): // the job outlives its TTL
			fmt.Println("migrated")
			return nil
		case <-ctx.Done(): // the lock was lost: stop writing
			return context.Cause(ctx)
		}
	})
	fmt.Println("err:", err)
	// Output:
	// migrated
	// err: <nil>
}

func ExampleClient_DoOrSkip() {
	client, closeServers := newClient(redlock.WithRetryCount(0))
	defer closeServers()
	ctx := context.Background()

	// Every host starts the nightly job; one runs it, the others skip.
	ran, err := client.DoOrSkip(ctx, "nightly", time.Minute, func(ctx context.Context) error {
		again, err := client.DoOrSkip(ctx, "nightly", time.Minute, func(context.Context) error { return nil })
		fmt.Println("second host ran:", again, err)
		return nil
	})
	fmt.Println("first host ran:", ran, err)
	// Output:
	// second host ran: false <nil>
	// first host ran: true <nil>
}

func ExampleLock_KeepAlive() {
	client, closeServers := newClient()
	defer closeServers()
	ctx := context.Background()

	lock, err := client.Acquire(ctx, "batch", time.Second)
	if err != nil {
		log.Fatal(err)
	}
	kept := make(chan error, 1)
	go func() { kept <- lock.KeepAlive(ctx) }() // extends every third of the TTL

	select {
	case <-time.After(2500 * time.Millisecond): // work longer than the TTL
	case <-lock.Done():
		log.Fatal("lost:", lock.Err())
	}
	if err := lock.Release(ctx); err != nil {
		log.Fatal(err)
	}
	fmt.Println("keep-alive ended:", <-kept)
	// Output:
	// keep-alive ended: <nil>
}

// A program closes its client before the key servers it was given: Close
// waits for the calls the client left running, such as the rest of a
// release on a slow server.
func ExampleNew() {
	servers := []keyserver.KeyServer{memory.New(), memory.New(), memory.New()}
	defer func() {
		for _, s := range servers {
			s.(*memory.Server).Close()
		}
	}()
	client, err := redlock.New(servers)
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()

	ctx := context.Background()
	lock, err := client.Acquire(ctx, "invoices", 10*time.Second)
	if err != nil {
		log.Fatal(err)
	}
	defer lock.Release(ctx) // runs first: release, then close the client
	fmt.Println("quorum:", client.Quorum())
	// Output:
	// quorum: 2
}

func ExampleLockFromContext() {
	client, closeServers := newClient()
	defer closeServers()

	err := client.Do(context.Background(), "export", 10*time.Second, func(ctx context.Context) error {
		lock, _ := redlock.LockFromContext(ctx)
		fmt.Println("holding", lock.Name(), "until about", time.Until(lock.Until()).Round(time.Second))
		return nil
	})
	fmt.Println("err:", err)
	// Output:
	// holding export until about 10s
	// err: <nil>
}

// A job scheduled on every host at about the same time, whose run is
// quick: the first host keeps the lock for a minute, so that a host whose
// clock fires a few seconds later skips instead of running it again. The
// TTL covers the minimum hold: Release cuts the keys' TTL, never lengthens
// it.
func ExampleWithMinHold() {
	client, closeServers := newClient(redlock.WithRetryCount(0))
	defer closeServers()
	ctx := context.Background()
	job := func(context.Context) error { return nil }

	ran, err := client.DoOrSkip(ctx, "hourly-digest", time.Minute, job, redlock.WithMinHold(time.Minute))
	fmt.Println("first host ran:", ran, err)
	ran, err = client.DoOrSkip(ctx, "hourly-digest", 10*time.Second, job)
	fmt.Println("a later host ran:", ran, err)
	// Output:
	// first host ran: true <nil>
	// a later host ran: false <nil>
}

// A store that checks fencing tokens: a holder paused past its lock's
// validity (a GC pause, a stopped VM) has its late write rejected, because
// the next holder wrote with a greater token. In SQL the check is
// UPDATE ... SET ..., fence = $1 WHERE id = $2 AND fence < $1.
func ExampleWithFencing() {
	client, closeServers := newClient(redlock.WithFencing())
	defer closeServers()
	ctx := context.Background()

	var stored uint64 // the store's last accepted token
	write := func(fence uint64) string {
		if fence <= stored {
			return "rejected"
		}
		stored = fence
		return "accepted"
	}

	old, err := client.Acquire(ctx, "ledger", 10*time.Second)
	if err != nil {
		log.Fatal(err)
	}
	old.Release(ctx) // stands in for a lock that expired while its holder was paused

	err = client.Do(ctx, "ledger", 10*time.Second, func(ctx context.Context) error {
		lock, _ := redlock.LockFromContext(ctx)
		fmt.Println("new holder's write:", write(lock.Fence()))
		return nil
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("old holder's late write:", write(old.Fence()))
	// Output:
	// new holder's write: accepted
	// old holder's late write: rejected
}

func ExampleClient_CheckFence() {
	client, closeServers := newClient(redlock.WithFencing())
	defer closeServers()
	ctx := context.Background()

	old, err := client.Acquire(ctx, "ledger", 10*time.Second)
	if err != nil {
		log.Fatal(err)
	}
	old.Release(ctx) // stands in for a lock that expired while its holder was paused
	current, _ := client.CheckFence(ctx, "ledger", old.Fence())
	fmt.Println("before the next grant:", current)

	err = client.Do(ctx, "ledger", 10*time.Second, func(ctx context.Context) error {
		current, err := client.CheckFence(ctx, "ledger", old.Fence())
		fmt.Println("after the next grant:", current)
		return err
	})
	if err != nil {
		log.Fatal(err)
	}
	// Output:
	// before the next grant: true
	// after the next grant: false
}

func ExampleClient_AcquireAll() {
	client, closeServers := newClient(redlock.WithFencing())
	defer closeServers()
	ctx := context.Background()

	// Both accounts or neither: no other call holds either while this one
	// moves money between them, and calls that name them in the other
	// order cannot deadlock with it.
	lock, err := client.AcquireAll(ctx, []string{"account:alice", "account:bob"}, 10*time.Second)
	if err != nil {
		log.Fatal(err)
	}
	defer lock.Release(ctx)
	for _, name := range lock.Names() {
		fmt.Println(name, "fence", lock.FenceOf(name))
	}
	// Output:
	// account:alice fence 1
	// account:bob fence 1
}
