package chaos

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/goredlock/goredlock/redlock"
)

// A client process is the test binary run again with childEnv set to its
// childConfig in JSON: TestMain then runs childMain instead of the tests.
// It takes locks through its own paths to the nodes, writes to the Store
// while it holds them, and reports on stdout, one JSON line each, that it
// is ready, that it holds a lock (so the parent can stop it then), each
// grant once released, and at the end its failures and leaks. It stops
// when its stdin closes.
const childEnv = "GOREDLOCK_CHAOS_CHILD"

// Stopped is the workload of the client processes: Acquire, write to the
// store, work a little, write again, Release. It does not watch for the
// loss of its lock: a process that is stopped could not anyway.
const Stopped Workload = "process"

type childConfig struct {
	ID     int
	Addrs  []string // the client's own paths to the nodes
	Store  string
	Names  []string
	Load   Load
	Seed   uint64
	Fenced bool
}

// childEvent is one line of a client process's stdout.
type childEvent struct {
	Kind     string         // "ready", "held", "grant", "done"
	Origin   int64          `json:",omitempty"` // ready: the zero of its history on CLOCK_MONOTONIC
	Grant    *Grant         `json:",omitempty"` // grant: on its history's clock
	Failures map[string]int `json:",omitempty"` // done
	Leaks    []Violation    `json:",omitempty"` // done: goroutines left running
	Err      string         `json:",omitempty"` // done: why it ended early
}

// procs runs the client processes of a scenario and collects their
// grants into the parent's history.
type procs struct {
	h      *History
	origin int64 // h's zero on CLOCK_MONOTONIC
	list   []*proc

	mu sync.Mutex // guards the proc fields marked so
}

type proc struct {
	id     int
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stderr bytes.Buffer  // read once exited is closed
	ready  chan struct{} // closed on its ready line or its exit
	exited chan struct{} // closed once it has exited and been waited for
	err    error         // of Wait; read once exited is closed

	// Guarded by procs.mu.
	delta    time.Duration // its history's zero minus the parent's
	holding  bool
	stopped  bool
	stops    []span // when it was stopped, on the parent history's clock
	failures map[string]int
	leaks    []Violation
	problems []string // lines it should not have written, its own errors
}

// span is an interval on a history's clock.
type span struct{ from, to time.Duration }

// procTimeout bounds a client process's start and its end once told to
// stop: the race detector makes both slow on a busy machine.
const procTimeout = 30 * time.Second

// historyOrigin returns h's zero on CLOCK_MONOTONIC.
func historyOrigin(h *History) int64 {
	now := time.Now()
	return monoNow() - int64(now.Sub(h.start))
}

// startProcs starts one client process per config and waits until each is
// ready. Whatever happens to the test, every process is killed and waited
// for when it ends.
func startProcs(t testing.TB, h *History, cfgs []childConfig) *procs {
	t.Helper()
	ps := &procs{h: h, origin: historyOrigin(h)}
	t.Cleanup(ps.kill)
	exe, err := os.Executable()
	if err != nil {
		t.Fatalf("chaos: the test binary: %v", err)
	}
	for _, cfg := range cfgs {
		b, err := json.Marshal(cfg)
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(exe, "-test.run=^$")
		cmd.Env = append(os.Environ(), childEnv+"="+string(b))
		cmd.SysProcAttr = childAttr()
		p := &proc{id: cfg.ID, cmd: cmd, ready: make(chan struct{}), exited: make(chan struct{})}
		cmd.Stderr = &p.stderr
		if p.stdin, err = cmd.StdinPipe(); err != nil {
			t.Fatal(err)
		}
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatalf("chaos: starting client process %d: %v", cfg.ID, err)
		}
		ps.list = append(ps.list, p)
		go ps.read(p, stdout) // ends once the process has exited; kill waits for it
	}
	deadline := time.After(procTimeout)
	for _, p := range ps.list {
		select {
		case <-p.ready:
		case <-deadline:
			t.Fatalf("chaos: client process %d not ready after %v", p.id, procTimeout)
		}
		select {
		case <-p.exited:
			t.Fatalf("chaos: client process %d ended at its start: %v\n%s", p.id, p.err, clip(p.stderr.String(), 2000))
		default:
		}
	}
	return ps
}

// read handles a process's stdout until it closes, then waits for the
// process.
func (ps *procs) read(p *proc, stdout io.Reader) {
	defer close(p.exited)
	readyOnce := sync.OnceFunc(func() { close(p.ready) })
	defer readyOnce()
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		var ev childEvent
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			ps.problem(p, "stdout: "+clip(sc.Text(), 200))
			continue
		}
		ps.mu.Lock()
		switch ev.Kind {
		case "ready":
			p.delta = time.Duration(ev.Origin - ps.origin)
			readyOnce()
		case "held":
			p.holding = true
		case "grant":
			p.holding = false
			if ev.Grant != nil {
				ps.h.Add(shift(*ev.Grant, p.delta))
			}
		case "done":
			p.failures, p.leaks = ev.Failures, ev.Leaks
			if ev.Err != "" {
				p.problems = append(p.problems, ev.Err)
			}
		}
		ps.mu.Unlock()
	}
	io.Copy(io.Discard, stdout) //nolint:errcheck // a line too long: drain, so the process can end
	p.err = p.cmd.Wait()
}

func (ps *procs) problem(p *proc, s string) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	p.problems = append(p.problems, s)
}

// shift moves a grant from a process's history clock to the parent's.
func shift(g Grant, d time.Duration) Grant {
	for _, t := range []*time.Duration{&g.Granted, &g.FirstUntil, &g.Until, &g.Released, &g.Lost} {
		if *t != Never {
			*t += d
		}
	}
	return g
}

// pickHolding returns a process that holds a lock and is running, at
// random, if fewer than max are stopped.
func (ps *procs) pickHolding(rng *rand.Rand, maxStopped int) (*proc, bool) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	var holding []*proc
	stopped := 0
	for _, p := range ps.list {
		switch {
		case p.stopped:
			stopped++
		case p.holding:
			holding = append(holding, p)
		}
	}
	if stopped >= maxStopped || len(holding) == 0 {
		return nil, false
	}
	return holding[rng.IntN(len(holding))], true
}

// stop stops p with SIGSTOP.
func (ps *procs) stop(p *proc) error {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if p.stopped {
		return nil
	}
	if err := stopProcess(p.cmd.Process); err != nil {
		return fmt.Errorf("stopping client process %d: %w", p.id, err)
	}
	p.stopped = true
	p.stops = append(p.stops, span{from: ps.h.Now(), to: Never})
	return nil
}

// cont continues p with SIGCONT.
func (ps *procs) cont(p *proc) error {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if !p.stopped {
		return nil
	}
	if err := continueProcess(p.cmd.Process); err != nil {
		return fmt.Errorf("continuing client process %d: %w", p.id, err)
	}
	p.stopped = false
	p.stops[len(p.stops)-1].to = ps.h.Now()
	return nil
}

// contAll continues every stopped process.
func (ps *procs) contAll() error {
	var errs []error
	for _, p := range ps.list {
		errs = append(errs, ps.cont(p))
	}
	return errors.Join(errs...)
}

// close tells every process to stop, by closing its stdin, and waits for
// each; one that does not end within procTimeout is killed. It returns the
// processes' problems and their goroutine leaks.
func (ps *procs) close() (problems []string, leaks []Violation) {
	if err := ps.contAll(); err != nil {
		problems = append(problems, err.Error())
	}
	for _, p := range ps.list {
		p.stdin.Close()
	}
	deadline := time.After(procTimeout)
	for _, p := range ps.list {
		select {
		case <-p.exited:
		case <-deadline:
			problems = append(problems, fmt.Sprintf("client process %d did not end within %v of its stdin closing; killed", p.id, procTimeout))
			p.cmd.Process.Kill() //nolint:errcheck // it may have ended meanwhile
			<-p.exited
		}
	}
	ps.mu.Lock()
	defer ps.mu.Unlock()
	for _, p := range ps.list {
		for _, s := range p.problems {
			problems = append(problems, fmt.Sprintf("client process %d: %s", p.id, s))
		}
		if p.err != nil {
			problems = append(problems, fmt.Sprintf("client process %d: %v; its stderr: %s", p.id, p.err, clip(p.stderr.String(), 2000)))
		}
		for _, v := range p.leaks {
			v.Detail = fmt.Sprintf("in client process %d: %s", p.id, v.Detail)
			leaks = append(leaks, v)
		}
	}
	return problems, leaks
}

// kill ends every process that is still running, and waits for it: the
// test's clean-up, which also runs when it failed half-way.
func (ps *procs) kill() {
	for _, p := range ps.list {
		select {
		case <-p.exited:
			continue
		default:
		}
		p.cmd.Process.Kill() //nolint:errcheck // it may have ended meanwhile
		<-p.exited
	}
}

// failures adds up the processes' failed operations by kind.
func (ps *procs) failures(into map[string]int) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	for _, p := range ps.list {
		for k, n := range p.failures {
			into[k] += n
		}
	}
}

// stopsOf returns the spans during which client id was stopped.
func (ps *procs) stopsOf(id int) []span {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	for _, p := range ps.list {
		if p.id == id {
			return slices.Clone(p.stops)
		}
	}
	return nil
}

// withoutStopped splits off the past grants that a stop of their holder
// explains: it was stopped within a TTL before the grant reached it, which
// can hold a grant back past its Until however right the library is.
func (ps *procs) withoutStopped(vs []Violation, grants []Grant, ttl time.Duration) (rest []Violation, n int) {
	for _, v := range vs {
		if v.Kind == PastGrant && len(v.Grants) == 1 {
			g := grants[v.Grants[0]]
			if slices.ContainsFunc(ps.stopsOf(g.Client), func(s span) bool {
				return s.from <= g.Granted && s.to >= g.Granted-ttl
			}) {
				n++
				continue
			}
		}
		rest = append(rest, v)
	}
	return rest, n
}

// childMain is a client process's main: it runs cfg, given in JSON, and
// returns the exit code.
func childMain(cfgJSON string) int {
	out := json.NewEncoder(os.Stdout)
	var emitMu sync.Mutex
	emit := func(ev childEvent) {
		emitMu.Lock()
		defer emitMu.Unlock()
		out.Encode(ev) //nolint:errcheck // the parent is gone: stdin's end stops us
	}
	var cfg childConfig
	if err := json.Unmarshal([]byte(cfgJSON), &cfg); err != nil {
		emit(childEvent{Kind: "done", Err: fmt.Sprintf("config: %v", err)})
		return 2
	}
	goroutines := takeGoroutineBaseline()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stdinDone := make(chan struct{})
	go func() {
		defer close(stdinDone)
		io.Copy(io.Discard, os.Stdin) //nolint:errcheck // any end of stdin means stop
		cancel()
	}()

	h := NewHistory()
	failed := func(err error) int {
		emit(childEvent{Kind: "done", Err: err.Error()})
		return 1
	}
	store, err := dialStore(cfg.Store)
	if err != nil {
		return failed(fmt.Errorf("store: %w", err))
	}
	c, err := newClient(cfg.ID, Stopped, cfg.Addrs, &cfg.Load, h, cfg.Seed, nil)
	if err != nil {
		store.Close()
		return failed(err)
	}
	emit(childEvent{Kind: "ready", Origin: historyOrigin(h)})
	c.stoppable(ctx, cfg.Names, store, h, emit)

	var errs []error
	errs = append(errs, c.close(), store.Close())
	<-stdinDone
	ev := childEvent{Kind: "done", Failures: c.failures, Leaks: goroutines.check(settleWait)}
	if err := errors.Join(errs...); err != nil {
		ev.Err = err.Error()
	}
	emit(ev)
	return 0
}

// stoppable is the Stopped workload, until ctx ends.
func (c *client) stoppable(ctx context.Context, names []string, store *storeClient, h *History, emit func(childEvent)) {
	origin := historyOrigin(h)
	write := func(g Grant) {
		_, err := store.write(writeRequest{Client: c.id, Token: g.Token, Name: g.Name, Fence: g.Fence,
			Granted: origin + int64(g.Granted)})
		if err != nil {
			c.fail(ctx, "store", err)
		}
	}
	for ctx.Err() == nil {
		name := c.pick(names)
		actx, cancel := context.WithTimeout(ctx, c.load.Patience)
		l, err := c.rc.Acquire(actx, name, c.load.TTL)
		cancel()
		if err != nil {
			c.fail(ctx, "acquire", err)
			sleep(ctx, c.between(0, c.load.Think))
			continue
		}
		g := c.granted(l, Stopped)
		emit(childEvent{Kind: "held"})
		write(g)
		sleep(ctx, c.between(c.load.MinJob, c.load.MaxJob)) // the parent stops it here, now and then
		write(g)
		g.Until = h.At(l.Until())
		g.Released = h.Now()
		rctx, rcancel := context.WithTimeout(context.Background(), releaseTimeout)
		err = l.Release(rctx)
		rcancel()
		emit(childEvent{Kind: "grant", Grant: &g})
		if err != nil && !errors.Is(err, redlock.ErrNotHeld) {
			c.failures["release"]++
		}
		sleep(ctx, c.between(0, c.load.Think))
	}
}
