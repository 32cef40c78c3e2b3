// Command election shows Client.Election on in-process key servers: three
// replicas of a scheduler campaign to lead; the leader works a while and
// resigns, the next one takes over, and an observer in a client of its
// own prints every change of leader as the servers announce it.
//
// On Redis, swap memory.New() for redis.FromURL(...); nothing else changes.
package main

import (
	"context"
	"fmt"
	"io"
	"log"
	"os"
	"strings"
	"sync"
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

// run prints to out the leaders the observer saw, in turn.
func run(out io.Writer) error {
	var servers []keyserver.KeyServer
	for range 3 {
		s := memory.New()
		defer s.Close()
		servers = append(servers, s)
	}
	newClient := func() (*redlock.Client, error) { return redlock.New(servers) }
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	// The observer: the leader's value at each change, "" while none.
	observer, err := newClient()
	if err != nil {
		return err
	}
	defer observer.Close()
	watch, stopWatching := context.WithCancel(ctx)
	defer stopWatching()
	changes := observer.Election("scheduler").Observe(watch)
	var seen []string
	observed := make(chan struct{})
	go func() {
		defer close(observed)
		for v := range changes {
			if v == "" {
				v = "(none)"
			}
			seen = append(seen, v)
			fmt.Fprintf(out, "observer: leader is %s\n", v)
		}
	}()

	replicas := map[string]*redlock.Client{}
	for _, replica := range []string{"10.0.0.1:8080", "10.0.0.2:8080", "10.0.0.3:8080"} {
		client, err := newClient()
		if err != nil {
			return err
		}
		defer client.Close()
		replicas[replica] = client
	}
	var wg sync.WaitGroup
	errs := make(chan error, len(replicas))
	for replica, client := range replicas {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Campaign returns once this replica leads, and keeps the
			// leadership alive until Release (resigning) or ctx ends.
			l, err := client.Election("scheduler").Campaign(ctx, time.Second, replica)
			if err != nil {
				errs <- err
				return
			}
			time.Sleep(200 * time.Millisecond) // schedule the jobs of its term
			errs <- l.Release(ctx)
		}()
	}
	wg.Wait()
	time.Sleep(100 * time.Millisecond) // the last change reaches the observer
	stopWatching()
	<-observed
	close(errs)
	for err := range errs {
		if err != nil {
			return err
		}
	}
	fmt.Fprintf(out, "\nleaders in turn: %s\n", strings.Join(seen, " → "))
	return nil
}
