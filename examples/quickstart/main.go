// Command quickstart shows goredlock with no Redis at all: four workers
// compete for two locks through three in-process key servers, and every
// hold is printed on a timeline. Run it with `make demo`.
//
// The same program runs against Redis by swapping memory.New() for
// redis.FromURL(...); nothing else changes.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"math/rand/v2"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/goredlock/goredlock/keyserver"
	"github.com/goredlock/goredlock/keyserver/memory"
	"github.com/goredlock/goredlock/redlock"
)

func main() {
	if err := run(os.Stdout); err != nil {
		log.Fatal(err)
	}
}

// run prints to out and fails if two workers ever held one lock at once.
func run(out io.Writer) error {
	// Three independent key servers; a lock needs two of them.
	var servers []keyserver.KeyServer
	for i := 0; i < 3; i++ {
		s := memory.New()
		defer s.Close()
		servers = append(servers, s)
	}
	client, err := redlock.New(servers,
		redlock.WithRetryCount(-1), // wait as long as the context allows
		redlock.WithRetryDelay(20*time.Millisecond))
	if err != nil {
		return err
	}
	defer client.Close() // before the servers close: waits for what the client left running

	start := time.Now()
	var printMu sync.Mutex
	say := func(worker int, format string, args ...any) {
		printMu.Lock()
		defer printMu.Unlock()
		fmt.Fprintf(out, "%6.3fs  worker %d  %s\n", time.Since(start).Seconds(), worker, fmt.Sprintf(format, args...))
	}

	locks := []string{"report", "backup"}
	holders := map[string]*atomic.Int32{"report": {}, "backup": {}}
	var overlaps atomic.Int32
	holds := map[string]*atomic.Int32{"report": {}, "backup": {}}

	fmt.Fprintf(out, "4 workers, locks %q, 3 in-memory key servers (quorum %d)\n\n", locks, client.Quorum())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	for w := 1; w <= 4; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for round := 0; round < 3; round++ {
				name := locks[rand.IntN(len(locks))]
				say(w, "wants  %-6s", name)
				err := client.Do(ctx, name, time.Second, func(ctx context.Context) error {
					if holders[name].Add(1) > 1 {
						overlaps.Add(1)
					}
					defer holders[name].Add(-1)
					holds[name].Add(1)
					work := time.Duration(50+rand.IntN(100)) * time.Millisecond
					say(w, "HOLDS  %-6s for %v", name, work)
					select {
					case <-time.After(work):
					case <-ctx.Done():
						return context.Cause(ctx)
					}
					say(w, "frees  %-6s", name)
					return nil
				})
				if err != nil {
					say(w, "failed %-6s: %v", name, err)
				}
			}
		}(w)
	}
	wg.Wait()

	fmt.Fprintf(out, "\nreport held %d times, backup %d times; overlapping holders: %d\n",
		holds["report"].Load(), holds["backup"].Load(), overlaps.Load())
	if overlaps.Load() > 0 {
		return errors.New("two workers held the same lock at once")
	}
	return nil
}
