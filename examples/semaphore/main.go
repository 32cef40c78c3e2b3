// Command semaphore shows Client.Semaphore on in-process key servers: six
// workers in three clients (three processes, as far as the servers can
// tell) share two permits of "encoder", and the program prints how many
// hold one at each moment: never more than two.
//
// On Redis, swap memory.New() for redis.FromURL(...); nothing else changes.
package main

import (
	"context"
	"fmt"
	"io"
	"log"
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

// permits is how many workers may encode at once.
const permits = 2

// run prints to out, and fails if more than permits workers ever held a
// permit at once.
func run(out io.Writer) error {
	var servers []keyserver.KeyServer
	for range 3 {
		s := memory.New()
		defer s.Close()
		servers = append(servers, s)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	start := time.Now()
	var (
		mu      sync.Mutex
		holding atomic.Int32
		most    atomic.Int32
		wg      sync.WaitGroup
	)
	say := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(out, "%6.3fs  %s\n", time.Since(start).Seconds(), fmt.Sprintf(format, args...))
	}
	fmt.Fprintf(out, "6 workers in 3 clients, %d permits of %q, 3 in-memory key servers\n\n", permits, "encoder")
	var clients []*redlock.Client
	for range 3 {
		client, err := redlock.New(servers, redlock.WithRetryCount(-1))
		if err != nil {
			return err
		}
		defer client.Close() // before the servers close
		clients = append(clients, client)
	}
	errs := make(chan error, 6)
	for c, client := range clients {
		sem := client.Semaphore("encoder", permits)
		for w := range 2 {
			wg.Add(1)
			go func(worker int) {
				defer wg.Done()
				errs <- sem.Do(ctx, time.Second, func(ctx context.Context) error {
					n := holding.Add(1)
					defer holding.Add(-1)
					for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
					}
					say("worker %d encodes (%d of %d permits held)", worker, n, permits)
					time.Sleep(100 * time.Millisecond)
					return nil
				})
			}(2*c + w + 1)
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			return err
		}
	}
	fmt.Fprintf(out, "\nmost permits held at once: %d\n", most.Load())
	if most.Load() > permits {
		return fmt.Errorf("%d workers held a permit at once; %d permits", most.Load(), permits)
	}
	return nil
}
