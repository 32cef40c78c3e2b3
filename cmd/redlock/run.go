package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/goredlock/goredlock/keyserver"
	"github.com/goredlock/goredlock/redlock"
)

// While --wait lasts, attempts are spaced from firstPoll doubling up to
// maxPoll, each wait drawn from half to one and a half times that, so
// that a waiter notices a release within about a second without a crowd
// of waiters hammering the servers in step.
const (
	firstPoll = 100 * time.Millisecond
	maxPoll   = time.Second
)

// run is redlock run: take the lock, run COMMAND under it, release it.
func (t *tool) run(args []string) error {
	cfg, err := parseRun(args, t.getenv)
	if err != nil {
		return err
	}
	// A host that cannot run COMMAND must not take the lock: it would
	// make the hosts that can skip their turn.
	path, err := lookCommand(cfg.command[0])
	if err != nil {
		return err
	}
	first := &firstAttempt{t: t, seen: map[int]bool{}}
	t.first = first
	opts := []redlock.ClientOption{redlock.WithLogger(t.logger()), redlock.WithHooks(redlock.Hooks{ServerFailed: first.failed})}
	if cfg.fence {
		opts = append(opts, redlock.WithFencing())
	}
	if cfg.noQuarantine {
		opts = append(opts, redlock.WithQuarantine(redlock.NoQuarantine))
	}
	srv, err := openServers(cfg.servers)
	if err != nil {
		return err
	}
	defer srv.close()
	t.addrs = srv.addrs

	// Caught from here to the end, so that no signal ends redlock between
	// taking the lock and its release reaching the servers.
	sigs := make(chan os.Signal, len(forwarded))
	signal.Notify(sigs, forwarded...)
	defer signal.Stop(sigs)

	// The calls' context ends with the run, after Close: a straggler of
	// the first attempt still reports the server it failed on.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	client, err := redlock.New(srv.keyServers(), opts...)
	if err != nil {
		return badf("%v", err)
	}
	// Close waits until the release reached every server, answered or
	// timed out, so that no key outlives the tool but by its TTL.
	defer client.Close()

	lock, err := t.acquire(ctx, cfg, client, sigs, first)
	if err != nil {
		return err
	}
	return t.hold(cfg, lock, path, sigs)
}

// lookCommand finds COMMAND as the shell would, and fails as the shell
// does: 127 when it is not found, 126 when it cannot be executed.
func lookCommand(name string) (string, error) {
	path, err := exec.LookPath(name)
	switch {
	case err == nil:
		return path, nil
	case errors.Is(err, exec.ErrNotFound) || errors.Is(err, fs.ErrNotExist):
		return "", failf(exitNotFound, "COMMAND not found: %v", err)
	}
	// Not executable, a directory, or found only relative to the current
	// directory through $PATH, which exec refuses.
	return "", failf(exitCannotExec, "cannot execute COMMAND: %v", err)
}

// acquire takes the lock, trying again while it is held elsewhere until
// --wait has passed. A forwarded signal ends the wait: redlock exits with
// 128+N and COMMAND never runs.
func (t *tool) acquire(ctx context.Context, cfg *runConfig, client *redlock.Client, sigs <-chan os.Signal, first *firstAttempt) (*redlock.Lock, error) {
	// A signal or a failure ends the attempts, not a grant: that would
	// cancel a straggler of the first attempt, and hide the server it
	// fails on (firstAttempt).
	ctx, cancel := context.WithCancel(ctx)
	var caught os.Signal
	stop, watched := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(watched)
		select {
		case caught = <-sigs:
			cancel()
		case <-stop:
		}
	}()
	// Quiet until the lock is held: the attempts' stragglers, which report
	// in the background, would repeat what the error says.
	t.quiet.Store(true)
	lock, err := tryFor(ctx, client, cfg, first)
	close(stop)
	if err != nil {
		cancel() // its error names every failure: no straggler is waited for
	}
	if err != nil && !errors.Is(err, redlock.ErrHeldElsewhere) {
		// The error names every server's failure.
		first.drop()
	} else {
		first.flush()
	}
	<-watched
	t.quiet.Store(err != nil || caught != nil)

	if caught != nil {
		if lock != nil {
			_ = lock.Release(context.Background())
		}
		return nil, failf(exitSignal+signalNumber(caught), "%v while waiting for %s; COMMAND not run", caught, cfg.what())
	}
	switch {
	case err == nil:
		return lock, nil
	case errors.Is(err, redlock.ErrHeldElsewhere) && cfg.skip:
		return nil, failf(exitOK, "%s is held elsewhere; COMMAND skipped", cfg.what())
	case errors.Is(err, redlock.ErrHeldElsewhere) && cfg.wait > 0:
		return nil, failf(exitTempFail, "%s is still held elsewhere after waiting %v", cfg.what(), cfg.wait)
	case errors.Is(err, redlock.ErrHeldElsewhere):
		return nil, failf(exitTempFail, "%s is held elsewhere", cfg.what())
	case errors.Is(err, redlock.ErrInvalidArgument):
		return nil, badf("%v", err)
	case hopeless(err) && cfg.wait > 0:
		return nil, failf(exitUnavailable, "%v; not retried for --wait: retrying cannot fix these failures", err)
	}
	// Too few servers answered: never a skip.
	return nil, &exitError{code: exitUnavailable, msg: err.Error()}
}

// what names what run waits for, in its messages: the lock NAME, or the
// permits of the semaphore NAME.
func (c *runConfig) what() string {
	if c.permits > 0 {
		return fmt.Sprintf("every one of the %d permits of semaphore %q", c.permits, c.name)
	}
	if len(c.also) > 0 {
		return "one of the " + c.held()
	}
	return fmt.Sprintf("lock %q", c.name)
}

// held names what run holds, in its messages: the lock NAME, or with
// --also the locks NAME, NAME2...
func (c *runConfig) held() string {
	if len(c.also) == 0 {
		return fmt.Sprintf("lock %q", c.name)
	}
	quoted := make([]string, 0, len(c.also)+1)
	for _, n := range c.names() {
		quoted = append(quoted, strconv.Quote(n))
	}
	return "locks " + strings.Join(quoted, ", ")
}

// wasLost says that what run holds was lost.
func (c *runConfig) wasLost() string {
	if len(c.also) == 0 {
		return c.held() + " was lost"
	}
	return c.held() + " were lost"
}

// names is every name run holds: NAME, then those of --also in order.
func (c *runConfig) names() []string {
	return append([]string{c.name}, c.also...)
}

// tryOnce makes one attempt at the lock NAME, at a permit of the
// semaphore NAME with --permits, or at every lock of NAME and --also.
func tryOnce(ctx context.Context, client *redlock.Client, cfg *runConfig) (*redlock.Lock, error) {
	if cfg.permits > 0 {
		return client.Semaphore(cfg.name, cfg.permits).TryAcquire(ctx, cfg.ttl)
	}
	if len(cfg.also) > 0 {
		// Every name or none, in one step on each server.
		return client.TryAcquireAll(ctx, cfg.names(), cfg.ttl)
	}
	return client.TryAcquire(ctx, cfg.name, cfg.ttl)
}

// tryFor makes one attempt, and more while the lock is not granted and
// --wait has not passed, or until ctx ends. Outages are retried as
// contention is: the last attempt's votes decide what the error says.
//
// Failures that retrying cannot fix (a rejected password, a key of the
// wrong type) on so many servers that no quorum is left end it at once.
func tryFor(ctx context.Context, client *redlock.Client, cfg *runConfig, first *firstAttempt) (*redlock.Lock, error) {
	deadline := time.Now().Add(cfg.wait)
	for n, poll := 1, firstPoll; ; n, poll = n+1, min(2*poll, maxPoll) {
		lock, err := tryOnce(context.WithValue(ctx, attemptKey{}, n), client, cfg)
		if err == nil || !errors.Is(err, redlock.ErrNotAcquired) || ctx.Err() != nil || hopeless(err) {
			return lock, err
		}
		left := time.Until(deadline)
		if left <= 0 {
			return nil, err
		}
		// Waiting: say now which servers failed the first attempt.
		first.flush()
		timer := time.NewTimer(min(poll/2+rand.N(poll), left))
		select {
		case <-ctx.Done():
			timer.Stop()
			return nil, err
		case <-timer.C:
		}
	}
}

// hopeless reports whether err is an acquisition that failed on so many
// servers with errors retrying cannot fix (keyserver.ErrPermanent) that
// no quorum can be reached by trying again.
func hopeless(err error) bool {
	var qe *redlock.QuorumError
	if !errors.As(err, &qe) || qe.Servers == 0 {
		return false
	}
	permanent := 0
	for _, se := range qe.Failed {
		if errors.Is(se, keyserver.ErrPermanent) {
			permanent++
		}
	}
	return permanent > qe.Servers-(qe.Servers/2+1)
}

// attemptKey is the context key of the number of an attempt of tryFor,
// 1 for the first, which the ServerFailed hook reads.
type attemptKey struct{}

// firstAttempt reports, one line each, the servers that failed the first
// attempt to take the lock: a server down or rejecting the password from
// the start would otherwise go unnoticed while the others grant the lock.
// The lines wait until the attempt's outcome is known: an error that ends
// the run names every failure itself, and then they are dropped.
type firstAttempt struct {
	t       *tool
	mu      sync.Mutex
	seen    map[int]bool // servers reported or pending
	pending []string
	live    bool // flushed: print at once (a straggler of the first attempt)
	dropped bool
}

// failed is the client's ServerFailed hook.
func (f *firstAttempt) failed(ctx context.Context, op, _ string, server int, err error) {
	if n, _ := ctx.Value(attemptKey{}).(int); n != 1 || (op != "acquire" && op != "identify") || errors.Is(err, context.Canceled) {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.seen[server] || f.dropped {
		return
	}
	f.seen[server] = true
	// The key server's errors start with its host:port already.
	addr := f.t.serverName(server)
	msg := fmt.Sprintf("redlock: server %s failed the first attempt: %s",
		addr, strings.TrimPrefix(err.Error(), addr+": "))
	if f.live {
		f.t.say(msg)
		return
	}
	f.pending = append(f.pending, msg)
}

// named reports whether server failed the first attempt, reported or
// pending: the client's warning of its failure would say it again.
func (f *firstAttempt) named(server int) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.seen[server]
}

// flush prints the failures so far, and any later one at once.
func (f *firstAttempt) flush() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.dropped {
		return
	}
	for _, msg := range f.pending {
		f.t.say(msg)
	}
	f.pending, f.live = nil, true
}

// drop forgets the failures: the error that ends the run names them.
func (f *firstAttempt) drop() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.live {
		f.pending, f.dropped = nil, true
	}
}

// signalNumber is sig's number, for the exit status 128+N.
func signalNumber(sig os.Signal) int {
	if s, ok := sig.(syscall.Signal); ok {
		return int(s)
	}
	return 0
}
