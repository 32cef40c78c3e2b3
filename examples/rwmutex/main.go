// Command rwmutex shows Client.RWMutex on in-process key servers: readers
// in two clients read a catalogue together, a writer in a third client
// rebuilds it alone, and readers that come while it waits let it go first.
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

// run prints to out, and fails if the writer ever held the lock with
// anyone else.
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
		mu               sync.Mutex
		readers, writers atomic.Int32
		mostReaders      atomic.Int32
		bad              atomic.Bool
	)
	say := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(out, "%6.3fs  %s\n", time.Since(start).Seconds(), fmt.Sprintf(format, args...))
	}
	var clients []*redlock.Client
	for range 3 {
		c, err := redlock.New(servers, redlock.WithRetryCount(-1))
		if err != nil {
			return err
		}
		defer c.Close()
		clients = append(clients, c)
	}

	read := func(c *redlock.Client, reader int) error {
		return c.RWMutex("catalogue").RDo(ctx, time.Second, func(context.Context) error {
			n := readers.Add(1)
			defer readers.Add(-1)
			for m := mostReaders.Load(); n > m && !mostReaders.CompareAndSwap(m, n); m = mostReaders.Load() {
			}
			if writers.Load() > 0 {
				bad.Store(true)
			}
			say("reader %d reads (%d readers)", reader, n)
			time.Sleep(50 * time.Millisecond)
			return nil
		})
	}
	var wg sync.WaitGroup
	errs := make(chan error, 9)
	for r := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			time.Sleep(time.Duration(r) * 15 * time.Millisecond)
			errs <- read(clients[r%2], r+1)
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		time.Sleep(30 * time.Millisecond)
		say("writer wants the catalogue")
		errs <- clients[2].RWMutex("catalogue").Do(ctx, time.Second, func(context.Context) error {
			writers.Add(1)
			defer writers.Add(-1)
			if readers.Load() > 0 {
				bad.Store(true)
			}
			say("writer rebuilds the catalogue alone")
			time.Sleep(100 * time.Millisecond)
			return nil
		})
	}()
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			return err
		}
	}
	fmt.Fprintf(out, "\nmost readers at once: %d; the writer alone: %t\n", mostReaders.Load(), !bad.Load())
	if bad.Load() {
		return fmt.Errorf("the writer held the lock with readers")
	}
	return nil
}
