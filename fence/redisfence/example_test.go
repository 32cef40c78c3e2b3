package redisfence_test

import (
	"context"
	"errors"
	"log"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/goredlock/goredlock/fence/redisfence"
	"github.com/goredlock/goredlock/keyserver"
	"github.com/goredlock/goredlock/keyserver/memory"
	"github.com/goredlock/goredlock/redlock"
)

// A job writes its result to a data Redis under a fenced lock. If the job
// is paused past its lease (a GC pause, SIGSTOP) while the next holder
// takes the lock and writes, its late write is refused with ErrStale and
// the next holder's value stays.
func Example() {
	pool := &redis.Pool{ // the data Redis, not a lock server
		DialContext: func(ctx context.Context) (redis.Conn, error) {
			return redis.DialContext(ctx, "tcp", "10.0.0.9:6379")
		},
		MaxIdle: 8,
	}
	defer pool.Close()
	guard := redisfence.New(pool)

	// The lock's own servers: in production, Redis masters (keyserver/redis).
	client, err := redlock.New([]keyserver.KeyServer{memory.New(), memory.New(), memory.New()}, redlock.WithFencing())
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
	err = client.Do(context.Background(), "report:2024-06", 10*time.Second, func(ctx context.Context) error {
		lock, _ := redlock.LockFromContext(ctx)
		report := []byte("...") // the job's work
		return guard.Set(ctx, "report:2024-06", report, lock.Fence(), 0)
	})
	if errors.Is(err, redisfence.ErrStale) {
		log.Print("a later holder wrote the report; ours was dropped")
	} else if err != nil {
		log.Fatal(err)
	}
}

// Eval runs a script of the caller's only for a current fence: here a
// counter and a log entry, changed together or not at all.
func ExampleGuard_Eval() {
	pool := &redis.Pool{
		DialContext: func(ctx context.Context) (redis.Conn, error) {
			return redis.DialContext(ctx, "tcp", "10.0.0.9:6379")
		},
	}
	defer pool.Close()
	guard := redisfence.New(pool)

	const script = `
local n = redis.call('INCRBY', KEYS[1], ARGV[1])
redis.call('RPUSH', KEYS[2], ARGV[2])
return n`
	var fence uint64 = 42 // lock.Fence() of a lock taken WithFencing
	n, err := redis.Int64(guard.Eval(context.Background(), script,
		[]string{"{stock:7}:count", "{stock:7}:log"}, fence, 5, "restocked 5"))
	if err != nil {
		log.Fatal(err) // ErrStale: a later holder got there first
	}
	log.Printf("stock %d", n)
}
