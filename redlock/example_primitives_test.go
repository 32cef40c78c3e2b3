package redlock_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/goredlock/goredlock/redlock"
)

func ExampleSemaphore() {
	client, closeServers := newClient()
	defer closeServers()
	ctx := context.Background()

	// At most two encoders at once, across every process that shares the
	// servers.
	sem := client.Semaphore("encoder", 2)
	first, err := sem.Acquire(ctx, 30*time.Second)
	if err != nil {
		log.Fatal(err)
	}
	second, err := sem.Acquire(ctx, 30*time.Second)
	if err != nil {
		log.Fatal(err)
	}
	_, err = sem.TryAcquire(ctx, 30*time.Second)
	fmt.Println("a third encoder:", errors.Is(err, redlock.ErrHeldElsewhere))

	// A permit is a *Lock: Do keeps it alive while the work runs.
	_ = first.Release(ctx)
	err = sem.Do(ctx, 30*time.Second, func(ctx context.Context) error {
		fmt.Println("encoding under a permit")
		return nil
	})
	if err != nil {
		log.Fatal(err)
	}
	_ = second.Release(ctx)
	// Output:
	// a third encoder: true
	// encoding under a permit
}

func ExampleRWMutex() {
	client, closeServers := newClient()
	defer closeServers()
	ctx := context.Background()

	catalog := client.RWMutex("catalog")
	r1, err := catalog.RLock(ctx, 10*time.Second)
	if err != nil {
		log.Fatal(err)
	}
	r2, err := catalog.RLock(ctx, 10*time.Second)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("two readers at once")
	_, err = catalog.TryLock(ctx, 10*time.Second)
	fmt.Println("a writer while they read:", errors.Is(err, redlock.ErrHeldElsewhere))
	_ = r1.Release(ctx)
	_ = r2.Release(ctx)

	err = catalog.Do(ctx, 10*time.Second, func(context.Context) error {
		fmt.Println("writing alone")
		return nil
	})
	if err != nil {
		log.Fatal(err)
	}
	// Output:
	// two readers at once
	// a writer while they read: true
	// writing alone
}

func ExampleElection() {
	client, closeServers := newClient()
	defer closeServers()
	ctx := context.Background()

	election := client.Election("scheduler")
	_, err := election.Leader(ctx)
	fmt.Println("before anyone campaigns:", errors.Is(err, redlock.ErrNoLeader))

	watch, stopWatching := context.WithCancel(ctx)
	changes := election.Observe(watch)
	fmt.Printf("observed: %q\n", <-changes)

	// Campaign returns once this process leads, and keeps the leadership
	// alive until it is released, lost, or ctx ends. ctx is the
	// leadership's lifetime, not only the wait: a context.WithTimeout here
	// would resign at its deadline (see ExampleElection_Campaign).
	leadership, err := election.Campaign(ctx, 10*time.Second, "host-a:8080")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("observed: %q\n", <-changes)
	leader, err := election.Leader(ctx)
	fmt.Println("leader:", leader, err, "term", leadership.Fence())

	_ = leadership.Release(ctx) // resign
	fmt.Printf("observed: %q\n", <-changes)
	stopWatching()
	for range changes { // closed once ctx ended
	}
	// Output:
	// before anyone campaigns: true
	// observed: ""
	// observed: "host-a:8080"
	// leader: host-a:8080 <nil> term 1
	// observed: ""
}

// Campaign's context bounds the leadership, not only the wait: a timeout
// around Campaign resigns at that timeout, even though Campaign returned
// long before it. To bound only the wait, give the call a retry limit.
func ExampleElection_Campaign() {
	client, closeServers := newClient()
	defer closeServers()
	election := client.Election("scheduler")

	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	leadership, err := election.Campaign(ctx, 10*time.Second, "host-a:8080")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("leading:", leadership.Err() == nil)
	<-leadership.Done() // closed when the timeout resigns the leadership
	fmt.Println("resigned at the timeout:", errors.Is(leadership.Err(), redlock.ErrNotHeld))

	// Bound the wait alone with a retry limit (25 retries of the 200 ms
	// retry delay: about 5 s), and give Campaign the context of the work
	// that leads: this leadership outlasts the 100 ms above.
	work := context.Background()
	leadership, err = election.Campaign(work, 10*time.Second, "host-a:8080", redlock.WithRetryCount(25))
	if err != nil {
		log.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	fmt.Println("leading after 200 ms:", leadership.Err() == nil)
	_ = leadership.Release(work)
	// Output:
	// leading: true
	// resigned at the timeout: true
	// leading after 200 ms: true
}
