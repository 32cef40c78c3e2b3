// Command multiredis takes a lock on N independent Redis masters and shows
// it surviving the loss of a minority of them.
//
//	make redis-up                 # five local masters on ports 7001-7005
//	go run ./examples/multiredis  # or: go run ./examples/multiredis redis://h1:6379 redis://h2:6379 ...
//	make redis-down
//
// Without URLs it uses the ports in REDIS_PORTS on 127.0.0.1, the variable
// make redis-up reads too, so one export moves both:
//
//	export REDIS_PORTS="8001 8002 8003"
//	make redis-up && go run ./examples/multiredis; make redis-down
//
// With -pause (the default) the program itself makes a minority of the
// servers stop answering for a few seconds, with CLIENT PAUSE, and takes,
// extends and releases the lock while they are silent.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"

	redigo "github.com/gomodule/redigo/redis"

	"github.com/goredlock/goredlock/keyserver"
	"github.com/goredlock/goredlock/keyserver/redis"
	"github.com/goredlock/goredlock/redlock"
)

// defaultPorts are the ports `make redis-up` starts when REDIS_PORTS is
// not set.
const defaultPorts = "7001 7002 7003 7004 7005"

func main() {
	pause := flag.Bool("pause", true, "make a minority of the servers stop answering during the demo")
	flag.Parse()
	urls, err := serverURLs(flag.Args(), os.Getenv("REDIS_PORTS"))
	if err != nil {
		log.Fatal(err)
	}
	if err := run(context.Background(), os.Stdout, urls, *pause); err != nil {
		log.Fatal(err)
	}
}

// serverURLs returns the URLs given as arguments or, when there are none,
// one for each port of ports (REDIS_PORTS: numbers separated by spaces or
// commas) on 127.0.0.1, or for the default ports when ports is empty.
func serverURLs(args []string, ports string) ([]string, error) {
	if len(args) > 0 {
		return args, nil
	}
	if strings.TrimSpace(ports) == "" {
		ports = defaultPorts
	}
	var urls []string
	for _, p := range strings.FieldsFunc(ports, func(r rune) bool { return r == ',' || unicode.IsSpace(r) }) {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return nil, fmt.Errorf("REDIS_PORTS: %q is not a port number", p)
		}
		urls = append(urls, "redis://"+net.JoinHostPort("127.0.0.1", p))
	}
	return urls, nil
}

func run(ctx context.Context, w io.Writer, urls []string, pause bool) error {
	out := &syncWriter{w: w} // the logger writes from the client's goroutines
	var servers []keyserver.KeyServer
	for _, u := range urls {
		s, err := redis.FromURL(u)
		if err != nil {
			return err
		}
		defer s.Close()
		servers = append(servers, s)
	}
	logger := slog.New(slog.NewTextHandler(out, &slog.HandlerOptions{Level: slog.LevelWarn}))
	client, err := redlock.New(servers, redlock.WithLogger(logger), redlock.WithRetryCount(3))
	if err != nil {
		return err
	}
	defer client.Close() // before the servers close: waits for what the client left running
	fmt.Fprintf(out, "%d servers, quorum %d\n", len(servers), client.Quorum())

	step := func(what string, f func() error) error {
		start := time.Now()
		err := f()
		fmt.Fprintf(out, "%-40s %-8v %v\n", what, time.Since(start).Round(time.Millisecond), errText(err))
		return err
	}

	var lock *redlock.Lock
	if err := step("acquire with every server up", func() error {
		lock, err = client.Acquire(ctx, "multiredis-demo", 10*time.Second)
		return err
	}); err != nil {
		return fmt.Errorf("are the servers up? (make redis-up): %w", err)
	}
	if err := step("release", func() error { return lock.Release(ctx) }); err != nil {
		return err
	}

	if !pause {
		return nil
	}
	minority := (len(urls) - 1) / 2
	if minority == 0 {
		fmt.Fprintln(out, "one server: there is no minority to lose")
		return nil
	}
	for _, u := range urls[:minority] {
		if err := pauseServer(u, 3*time.Second); err != nil {
			return err
		}
	}
	fmt.Fprintf(out, "\n%d of %d servers now stop answering for 3s (CLIENT PAUSE)\n", minority, len(urls))
	if err := step("acquire with a minority silent", func() error {
		lock, err = client.Acquire(ctx, "multiredis-demo", 10*time.Second)
		return err
	}); err != nil {
		return err
	}
	if err := step("extend with a minority silent", func() error { return lock.Extend(ctx, 10*time.Second) }); err != nil {
		return err
	}
	if err := step("release with a minority silent", func() error { return lock.Release(ctx) }); err != nil {
		return err
	}
	// The calls to the silent servers were not waited for; they end at the
	// per-server timeout (5% of the TTL), and their failures are logged.
	fmt.Fprintln(out, "\nthe silent servers' calls time out in the background:")
	time.Sleep(time.Second)
	return nil
}

// pauseServer makes the server at url hold every client's commands for d.
func pauseServer(url string, d time.Duration) error {
	conn, err := redigo.DialURL(url)
	if err != nil {
		return err
	}
	defer conn.Close()
	_, err = conn.Do("CLIENT", "PAUSE", d.Milliseconds(), "ALL")
	return err
}

type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

func errText(err error) string {
	switch {
	case err == nil:
		return "ok"
	case errors.Is(err, redlock.ErrNotAcquired):
		return "not acquired: " + err.Error()
	}
	return err.Error()
}
