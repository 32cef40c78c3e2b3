// Command bench compares goredlock with the Go Redis lock libraries its
// users compare it with, on redis-server processes it starts itself:
//
//	cd bench && go run .                # 5 nodes, 5 s per case, 3 repetitions
//	cd bench && go run . -nodes 1       # one node: bsm/redislock joins in
//	cd bench && go run . -quick         # a short smoke run
//	cd bench && go run . -clients 8     # every workload over 8 independent clients
//	cd bench && go run . -states healthy,silent1,dead1 -workloads 1-distinct,64-distinct
//	                                    # also with a node silent, and dead
//	cd bench && go run . -peers goredlock-goredis -workloads 64-distinct -cpuprofile cpu.out
//	                                    # then: go tool pprof -top cpu.out
//
// Every library runs the same workloads in turn (never two at once, so
// that the process's CPU time and the nodes' command counters belong to
// one case), and a markdown table of the medians goes to standard output;
// progress goes to standard error. With -states, the workloads run again
// with a minority of the nodes silent (SIGSTOP) or dead (killed), every
// library in the same state in the same run (states.go), and a table per
// workload sets the degraded rows beside goredlock's healthy one. It lives
// in a module of its own so that users of goredlock never download the
// libraries it is compared with.
//
// The peers' versions are pinned in go.mod: redsync v4.15.0 is the newest
// whose module graph (its tests need rueidis/rueidiscompat at the same
// version as rueidis) resolves through the Go module proxy, and
// rueidis v1.0.69 goes with it.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"runtime/pprof"
	"slices"
	"strings"
	"syscall"
	"time"
)

func main() {
	cfg, err := parse(os.Args[1:])
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	stopProfile, err := startProfile(cfg.cpuProfile)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
	_, err = run(ctx, cfg, os.Stdout, os.Stderr)
	if perr := stopProfile(); err == nil {
		err = perr
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		stop()
		os.Exit(1)
	}
}

// startProfile writes a CPU profile of the whole run to path, when path
// is not empty (-cpuprofile), until the call it returns.
func startProfile(path string) (stop func() error, err error) {
	if path == "" {
		return func() error { return nil }, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close() //nolint:errcheck // reporting the first error
		return nil, err
	}
	return func() error {
		pprof.StopCPUProfile()
		return f.Close()
	}, nil
}

// config is what the flags ask for.
type config struct {
	nodes      int
	reps       int
	clients    int // for the workloads that do not set their own
	timing     timing
	settings   settings
	peers      []peer
	workloads  []workload
	states     []nodeState
	startWait  time.Duration // how long a library's clients may take to open
	server     string        // redis-server binary
	cpuProfile string        // -cpuprofile: where the run's CPU profile goes
	args       []string      // the flags as given, for the report
}

func parse(args []string) (config, error) {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	var (
		cfg                         config
		quick                       bool
		peerList, wlList, stateList string
		allPeers, allLoads          []string
	)
	for _, p := range peers() {
		if !p.extra {
			allPeers = append(allPeers, p.name)
		}
	}
	for _, w := range workloads() {
		if w.names == 0 {
			allLoads = append(allLoads, w.name)
		}
	}
	fs.IntVar(&cfg.nodes, "nodes", 5, "how many redis-server processes to start")
	fs.IntVar(&cfg.reps, "reps", 3, "repetitions of every case; the tables show medians")
	fs.DurationVar(&cfg.timing.duration, "duration", 5*time.Second, "how long each case is measured")
	fs.DurationVar(&cfg.timing.warmup, "warmup", time.Second, "how long each case runs before it is measured")
	fs.DurationVar(&cfg.settings.ttl, "ttl", 10*time.Second, "lock TTL for every library")
	fs.DurationVar(&cfg.settings.retry, "retry", time.Millisecond, "the short retry delay: goredlock's variant, bsm/redislock and the floor")
	fs.IntVar(&cfg.clients, "clients", 1, "independent clients (own connections, as separate processes would have) that the goroutines of the workloads without a count of their own (not 8c-*) are dealt over")
	fs.BoolVar(&quick, "quick", false, "a smoke run: 300 ms per case after 100 ms, 1 repetition")
	fs.StringVar(&peerList, "peers", strings.Join(allPeers, ","), "libraries to run; also goredlock-pool, goredlock-pool-counted, goredlock-pool-percall (redis.New over a caller's redigo pool: as it is, counted by redis.CountDials, a connection per call), goredlock-goredis, goredlock-rueidis, goredlock-valkey (the other transports) and goredlock-permit, goredlock-read, goredlock-write (the primitives), goredlock-set, goredlock-set-one-by-one (sets of 4 names, for the workload 64-distinct-set4)")
	fs.StringVar(&wlList, "workloads", strings.Join(allLoads, ","), "workloads to run; also 64-distinct-set4 (a set of 4 names per grant, for the set peers)")
	fs.StringVar(&stateList, "states", "healthy", "node states to run every workload in, each library in turn: healthy, silent1 and silent2 (the last 1 or 2 nodes stopped with SIGSTOP before the clients are created), silent-mid (the last node stopped halfway through the measured window), dead1 (the last node killed before the clients are created, its port refusing connections); each case puts the nodes back (SIGCONT, restart on the same port) and waits until they answer. All: "+stateNames())
	fs.DurationVar(&cfg.startWait, "start-wait", 5*time.Second, "how long a library's clients may take to be created: past it, or on an error, a degraded state's row says cannot start (a healthy case fails the run)")
	fs.StringVar(&cfg.server, "redis-server", "redis-server", "the redis-server binary")
	fs.StringVar(&cfg.cpuProfile, "cpuprofile", "", "write a CPU profile of the whole run (every case: name one peer and one workload to profile them) to this file, for go tool pprof")
	if err := fs.Parse(args); err != nil {
		return config{}, err
	}
	if fs.NArg() > 0 {
		return config{}, fmt.Errorf("unexpected arguments: %q", fs.Args())
	}
	if quick {
		cfg.timing = timing{warmup: 100 * time.Millisecond, duration: 300 * time.Millisecond}
		cfg.reps = 1
	}
	switch {
	case cfg.nodes < 1:
		return config{}, fmt.Errorf("-nodes %d: need at least 1", cfg.nodes)
	case cfg.clients < 1:
		return config{}, fmt.Errorf("-clients %d: need at least 1", cfg.clients)
	case cfg.reps < 1:
		return config{}, fmt.Errorf("-reps %d: need at least 1", cfg.reps)
	case cfg.timing.duration <= 0 || cfg.timing.warmup < 0:
		return config{}, errors.New("-duration must be positive and -warmup not negative")
	case cfg.settings.ttl < time.Second:
		return config{}, fmt.Errorf("-ttl %v: use at least 1s, so that no lock runs out while held", cfg.settings.ttl)
	case cfg.settings.retry <= 0:
		return config{}, fmt.Errorf("-retry %v: must be positive", cfg.settings.retry)
	case cfg.startWait <= 0:
		return config{}, fmt.Errorf("-start-wait %v: must be positive", cfg.startWait)
	}
	var err error
	if cfg.peers, err = pick(peers(), peerList, func(p peer) string { return p.name }); err != nil {
		return config{}, fmt.Errorf("-peers: %w", err)
	}
	if cfg.workloads, err = pick(withClients(workloads(), cfg.clients), wlList, func(w workload) string { return w.name }); err != nil {
		return config{}, fmt.Errorf("-workloads: %w", err)
	}
	if cfg.states, err = pick(nodeStates(), stateList, func(st nodeState) string { return st.name }); err != nil {
		return config{}, fmt.Errorf("-states: %w", err)
	}
	if err := checkStates(cfg.states, cfg.nodes); err != nil {
		return config{}, fmt.Errorf("-states: %w", err)
	}
	cfg.args = args
	return cfg, nil
}

// pick returns the items named in the comma-separated list, in their own
// order.
func pick[T any](all []T, list string, name func(T) string) ([]T, error) {
	want := strings.Split(list, ",")
	var out []T
	for _, it := range all {
		if i := slices.Index(want, name(it)); i >= 0 {
			out = append(out, it)
			want = slices.Delete(want, i, i+1)
		}
	}
	if len(want) > 0 {
		var known []string
		for _, it := range all {
			known = append(known, name(it))
		}
		return nil, fmt.Errorf("unknown %q (known: %s)", want, strings.Join(known, ", "))
	}
	return out, nil
}

// run starts the nodes, runs every case cfg.reps times and writes the
// report to out. The nodes are stopped when it returns, also on error or
// when ctx ends.
func run(ctx context.Context, cfg config, out, progress io.Writer) (*results, error) {
	bin, err := exec.LookPath(cfg.server)
	if err != nil {
		return nil, fmt.Errorf("%w (install it with: apt-get install redis-server)", err)
	}
	nodes, err := startNodes(ctx, bin, cfg.nodes)
	if err != nil {
		return nil, err
	}
	defer stopNodes(nodes)
	return runOn(ctx, cfg, nodes, out, progress)
}

// runOn is run on nodes already started (len(nodes) == cfg.nodes), which
// it leaves running and healthy.
func runOn(ctx context.Context, cfg config, nodes []*node, out, progress io.Writer) (*results, error) {
	var addrs []string
	for _, nd := range nodes {
		addrs = append(addrs, nd.addr)
	}
	counters, err := openCounters(addrs)
	if err != nil {
		return nil, err
	}
	defer counters.close()

	res := newResults(cfg, counters.serverVersion())
	for rep := 0; rep < cfg.reps; rep++ {
		for si, st := range cfg.states {
			for wi, w := range cfg.workloads {
				// Rotate the order of the libraries from one repetition to
				// the next, so that none always runs first or last.
				for k := range cfg.peers {
					pi := (k + rep) % len(cfg.peers)
					p := cfg.peers[pi]
					why := p.skip(cfg.nodes, w)
					if why == "" && w.names > 0 && !p.sets {
						why = "takes one name per grant"
					}
					if why != "" {
						res.skipped(pi, wi, why)
						continue
					}
					name := fmt.Sprintf("%s, %s", p.name, w.name)
					prefix := fmt.Sprintf("bench:%s:%s:%d", p.name, w.name, rep)
					if !st.healthy() {
						name = fmt.Sprintf("%s, %s", name, st.name)
						prefix = fmt.Sprintf("bench:%s:%s:%s:%d", st.name, p.name, w.name, rep)
					}
					sm, err := runInState(ctx, cfg, st, nodes, counters, p, w, addrs, prefix)
					if err != nil {
						return nil, fmt.Errorf("%s: %w", name, err)
					}
					res.add(si, pi, wi, sm)
					progressLine(progress, rep, cfg.reps, st, w, p, sm)
				}
			}
		}
	}
	if err := res.write(out); err != nil {
		return nil, err
	}
	return res, nil
}

// runInState runs one case in state st: the state is set up before the
// clients are created (or halfway through the window, silent-mid) and
// undone before the next case, also on error. In a degraded state, a
// library whose clients cannot be created gets a sample that says so, and
// the nodes' command counters are not read (a silent node would not
// answer INFO).
func runInState(ctx context.Context, cfg config, st nodeState, nodes []*node, counters *nodeCounters, p peer, w workload, addrs []string, prefix string) (sample, error) {
	h := hooks{openWait: cfg.startWait}
	if st.healthy() {
		return runCaseWith(ctx, p, w, addrs, cfg.settings, cfg.timing, counters, prefix, h)
	}
	f := &faults{st: st, nodes: nodes, counters: counters}
	h.undo = func() error { return f.undo(ctx) }
	if st.silentMid > 0 {
		h.mid = f.mid
	}
	err := f.before()
	var sm sample
	if err == nil {
		sm, err = runCaseWith(ctx, p, w, addrs, cfg.settings, cfg.timing, nil, prefix, h)
	}
	uerr := f.undo(ctx)
	var se *startError
	if errors.As(err, &se) {
		err, sm = nil, sample{cannotStart: se.err.Error()}
	}
	if err == nil {
		err = uerr
	}
	return sm, err
}

func progressLine(w io.Writer, rep, reps int, st nodeState, wl workload, p peer, sm sample) {
	state := ""
	if !st.healthy() {
		state = fmt.Sprintf("%-11s ", st.name)
	}
	if sm.cannotStart != "" {
		fmt.Fprintf(w, "rep %d/%d  %s%-15s %-20s cannot start: %s\n", rep+1, reps, state, wl.name, p.name, sm.cannotStart)
		return
	}
	var extra string
	if sm.stuck > 0 {
		extra = fmt.Sprintf("  stuck %d", sm.stuck)
	}
	if sm.abandoned > 0 {
		extra += fmt.Sprintf("  abandoned %d", sm.abandoned)
	}
	fmt.Fprintf(w, "rep %d/%d  %s%-15s %-20s %9.0f ops/s  p50 %-9s p99 %-9s overlaps %d%s\n",
		rep+1, reps, state, wl.name, p.name, sm.opsPerSec, fmtDur(sm.lat.p50), fmtDur(sm.lat.p99), sm.overlaps, extra)
}
