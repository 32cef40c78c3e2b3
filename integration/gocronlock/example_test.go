package gocronlock_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/go-co-op/gocron/v2"

	"github.com/goredlock/goredlock/integration/gocronlock"
	"github.com/goredlock/goredlock/keyserver"
	"github.com/goredlock/goredlock/keyserver/memory"
	"github.com/goredlock/goredlock/redlock"
)

// Two hosts, each with its own client and gocron scheduler, schedule the
// same job every 300 ms; at each tick it runs on one host only. The key
// server is an in-memory one that both hosts share, standing in for the
// Redis masters of a real deployment.
func Example() {
	servers := []keyserver.KeyServer{memory.New()}
	defer servers[0].(*memory.Server).Close()

	const every = 300 * time.Millisecond
	start := time.Now().Truncate(every).Add(2 * every) // the same first tick on both hosts

	var (
		mu   sync.Mutex
		runs = map[int]int{} // tick → runs
	)
	report := func() {
		tick := int((time.Since(start) + every/2) / every)
		mu.Lock()
		runs[tick]++
		mu.Unlock()
		time.Sleep(20 * time.Millisecond) // the work
	}

	var schedulers []gocron.Scheduler
	for host := 0; host < 2; host++ {
		client, err := redlock.New(servers)
		if err != nil {
			panic(err)
		}
		defer client.Close()
		// Keep each run's lock for 150 ms at least, so that a host that
		// fires a little late skips the run that the other just did.
		locker, err := gocronlock.New(client, gocronlock.WithMinHold(150*time.Millisecond))
		if err != nil {
			panic(err)
		}
		s, err := gocron.NewScheduler(gocron.WithDistributedLocker(locker))
		if err != nil {
			panic(err)
		}
		_, err = s.NewJob(gocron.DurationJob(every), gocron.NewTask(report),
			gocron.WithName("report"), // the lock's name: the same on every host
			gocron.WithStartAt(gocron.WithStartDateTime(start)))
		if err != nil {
			panic(err)
		}
		s.Start()
		schedulers = append(schedulers, s)
	}

	time.Sleep(time.Until(start.Add(2*every + every/2))) // ticks 0, 1 and 2
	for _, s := range schedulers {
		if err := s.Shutdown(); err != nil {
			panic(err)
		}
	}
	for tick := 0; tick < 3; tick++ {
		fmt.Printf("tick %d: %d run\n", tick, runs[tick])
	}
	// Output:
	// tick 0: 1 run
	// tick 1: 1 run
	// tick 2: 1 run
}

// What gocron does with a Locker: Lock when a job is due, Unlock when it
// returns. A host that finds the lock held gets ErrHeldElsewhere, and
// gocron skips the run there.
func ExampleNew() {
	srv := memory.New() // the Redis masters of a real deployment
	defer srv.Close()

	var lockers []*gocronlock.Locker
	for host := 0; host < 2; host++ {
		client, err := redlock.New([]keyserver.KeyServer{srv})
		if err != nil {
			panic(err)
		}
		defer client.Close()
		locker, err := gocronlock.New(client, gocronlock.WithTTL(10*time.Second), gocronlock.WithKeyPrefix("cron:"))
		if err != nil {
			panic(err)
		}
		lockers = append(lockers, locker)
	}

	ctx := context.Background()
	lock, err := lockers[0].Lock(ctx, "report")
	fmt.Println("host 0 locks:", err)
	_, err = lockers[1].Lock(ctx, "report")
	fmt.Println("host 1 skips:", errors.Is(err, redlock.ErrHeldElsewhere))
	fmt.Println("host 0 unlocks:", lock.Unlock(ctx))
	// Output:
	// host 0 locks: <nil>
	// host 1 skips: true
	// host 0 unlocks: <nil>
}
