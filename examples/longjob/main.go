// Command longjob runs a job much longer than its lock's TTL under Do: the
// lock is extended in the background while the job works, and when the key
// servers go away under it the job is told through its context and stops
// before its lock could be taken by anyone else.
//
//	go run ./examples/longjob
//
// It uses three in-process key servers and closes two of them mid-job; with
// Redis the same happens when a majority of masters die or become
// unreachable.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/goredlock/goredlock/keyserver"
	"github.com/goredlock/goredlock/keyserver/memory"
	"github.com/goredlock/goredlock/redlock"
)

func main() {
	if err := run(os.Stdout, 300*time.Millisecond); err != nil {
		log.Fatal(err)
	}
}

// run runs the demo with locks of the given TTL.
func run(w io.Writer, ttl time.Duration) error {
	out := &syncWriter{w: w}
	mem := []*memory.Server{memory.New(), memory.New(), memory.New()}
	servers := make([]keyserver.KeyServer, len(mem))
	for i, m := range mem {
		defer m.Close()
		servers[i] = m
	}
	logger := slog.New(slog.NewTextHandler(out, &slog.HandlerOptions{
		Level:       slog.LevelWarn,
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr { return dropTime(a) },
	}))
	client, err := redlock.New(servers, redlock.WithLogger(logger))
	if err != nil {
		return err
	}
	defer client.Close() // before the servers close: waits for what the client left running
	start := time.Now()
	say := func(format string, args ...any) {
		fmt.Fprintf(out, "%5.2fs  %s\n", time.Since(start).Seconds(), fmt.Sprintf(format, args...))
	}

	say("job 1: 10 steps of %v under a lock with a TTL of %v", ttl/2, ttl)
	err = client.Do(context.Background(), "longjob", ttl, func(ctx context.Context) error {
		for step := 1; step <= 10; step++ {
			if err := work(ctx, ttl/2); err != nil {
				return err
			}
			say("  step %d done", step)
		}
		return nil
	})
	say("job 1 returned: %v (it ran %v, %.0f× its TTL)", errText(err), time.Since(start).Round(10*time.Millisecond),
		float64(time.Since(start))/float64(ttl))
	if err != nil {
		return err
	}

	start = time.Now()
	say("job 2: the same, but two of the three servers go away after step 3")
	err = client.Do(context.Background(), "longjob", ttl, func(ctx context.Context) error {
		for step := 1; step <= 10; step++ {
			if err := work(ctx, ttl/2); err != nil {
				say("  step %d interrupted: %v", step, context.Cause(ctx))
				return context.Cause(ctx)
			}
			say("  step %d done", step)
			if step == 3 {
				mem[0].Close()
				mem[1].Close()
				say("  servers 0 and 1 are gone")
			}
		}
		return nil
	})
	say("job 2 returned: %v", errText(err))
	if !errors.Is(err, redlock.ErrLockLost) {
		return fmt.Errorf("job 2 should have lost its lock, got %v", err)
	}
	return nil
}

// work stands for one step of the job; it stops when ctx ends.
func work(ctx context.Context, d time.Duration) error {
	select {
	case <-time.After(d):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func errText(err error) string {
	if err == nil {
		return "ok"
	}
	return err.Error()
}

func dropTime(a slog.Attr) slog.Attr {
	if a.Key == slog.TimeKey {
		return slog.Attr{}
	}
	return a
}

// syncWriter serialises the demo's lines and the logger's.
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}
