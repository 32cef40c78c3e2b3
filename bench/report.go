package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"time"
)

// results collects the samples of every case and writes the report.
type results struct {
	cfg     config
	redis   string
	samples map[caseKey][]sample
	skips   map[[2]int]string // by peer and workload index
}

// caseKey is a case by the indexes of its state, peer and workload in the
// config.
type caseKey struct{ state, peer, wl int }

func newResults(cfg config, redisVersion string) *results {
	return &results{cfg: cfg, redis: redisVersion, samples: map[caseKey][]sample{}, skips: map[[2]int]string{}}
}

func (r *results) add(state, peer, wl int, s sample) {
	k := caseKey{state, peer, wl}
	r.samples[k] = append(r.samples[k], s)
}

// stateIndex is the index of the state called name in the config, or -1.
func (r *results) stateIndex(name string) int {
	return slices.IndexFunc(r.cfg.states, func(st nodeState) bool { return st.name == name })
}

// peerIndex is the index of the peer called name in the config, or -1.
func (r *results) peerIndex(name string) int {
	return slices.IndexFunc(r.cfg.peers, func(p peer) bool { return p.name == name })
}

// degraded says whether any state but healthy ran.
func (r *results) degraded() bool {
	return slices.ContainsFunc(r.cfg.states, func(st nodeState) bool { return !st.healthy() })
}

func (r *results) skipped(peer, wl int, why string) { r.skips[[2]int{peer, wl}] = why }

// row is the medians of one case over its repetitions (those whose
// clients could be created).
type row struct {
	label                  string
	clients                int // independent clients the case ran over
	ops, jain, cmds        float64
	jainClients            float64 // 0 on one client
	p50, p99, max, cpu     time.Duration
	overlaps, gaveUp, runs int64
	unlockErrs, conns      int64
	firstErr               string
	// Summed over repetitions: the ones that could not start (startErr
	// says why, the first time), goroutines still in a call stuckAfter
	// after the window, goroutines abandoned, closes that did not return.
	cannotStart, stuck, abandoned, closeStuck int64
	startErr                                  string
}

// row is the healthy state's row of peer on workload wl.
func (r *results) row(peer, wl int) (row, bool) {
	return r.rowIn(r.stateIndex("healthy"), peer, wl)
}

// rowIn is state st's row of peer on workload wl; false when it did not run.
func (r *results) rowIn(st, peer, wl int) (row, bool) {
	all := r.samples[caseKey{st, peer, wl}]
	if len(all) == 0 {
		return row{}, false
	}
	var (
		rw                      = row{label: r.cfg.peers[peer].label(r.cfg.settings), clients: r.cfg.workloads[wl].lockers()}
		ss                      []sample
		ops, jains, cmds        []float64
		jainClients             []float64
		p50s, p99s, maxes, cpus []time.Duration
		gaveUps, conns          []int64
	)
	for _, s := range all {
		if s.cannotStart != "" {
			rw.cannotStart++
			if rw.startErr == "" {
				rw.startErr = s.cannotStart
			}
			continue
		}
		ss = append(ss, s)
	}
	rw.runs = int64(len(ss))
	for _, s := range ss {
		rw.stuck += s.stuck
		rw.abandoned += s.abandoned
		if s.closeStuck {
			rw.closeStuck++
		}
		ops = append(ops, s.opsPerSec)
		jains = append(jains, s.jain)
		jainClients = append(jainClients, s.jainClients)
		cmds = append(cmds, s.cmdsPerOp)
		p50s = append(p50s, s.lat.p50)
		p99s = append(p99s, s.lat.p99)
		maxes = append(maxes, s.lat.max)
		cpus = append(cpus, s.cpuPerOp)
		gaveUps = append(gaveUps, s.gaveUp)
		conns = append(conns, s.conns)
		rw.overlaps += s.overlaps
		rw.unlockErrs += s.unlockErrs
		if rw.firstErr == "" {
			rw.firstErr = s.firstErr
		}
	}
	rw.ops, rw.jain, rw.cmds = median(ops), median(jains), median(cmds)
	rw.jainClients = median(jainClients)
	rw.p50, rw.p99, rw.max, rw.cpu = median(p50s), median(p99s), median(maxes), median(cpus)
	rw.gaveUp, rw.conns = median(gaveUps), median(conns)
	if rw.clients > 1 {
		rw.label = fmt.Sprintf("%s × %d clients", rw.label, rw.clients)
	}
	return rw, true
}

// uncontendedCmds is the Redis commands per grant of peer on the
// uncontended workload (one goroutine), or of the peer that stands for it
// there; false when that workload did not run.
func (r *results) uncontendedCmds(peer int) (float64, bool) {
	for wi, w := range r.cfg.workloads {
		if !w.uncontended() {
			continue
		}
		if rw, ok := r.row(peer, wi); ok {
			return rw.cmds, rw.cmds > 0
		}
		for pi, p := range r.cfg.peers {
			if as := r.cfg.peers[peer].uncontendedAs; as != "" && p.name == as {
				rw, ok := r.row(pi, wi)
				return rw.cmds, ok && rw.cmds > 0
			}
		}
	}
	return 0, false
}

func (r *results) write(w io.Writer) error {
	bw := bufio.NewWriter(w)
	cfg := r.cfg
	fmt.Fprintf(bw, "## goredlock and its peers: %d local Redis node(s)\n\n", cfg.nodes)
	fmt.Fprintf(bw, "- machine: %d CPUs, %s, %s/%s, %s, redis-server %s\n", runtime.NumCPU(), cpuModel(), runtime.GOOS, runtime.GOARCH, runtime.Version(), r.redis)
	fmt.Fprintf(bw, "- nodes: %d redis-server processes on loopback (no persistence), on the same machine as the client\n", cfg.nodes)
	fmt.Fprintf(bw, "- each case: %v warm-up, then %v measured; medians of %d repetition(s); TTL %v\n", cfg.timing.warmup, cfg.timing.duration, cfg.reps, cfg.settings.ttl)
	fmt.Fprintf(bw, "- command: `%s`\n", commandLine(cfg.args))
	if r.degraded() {
		var names []string
		for _, st := range cfg.states {
			names = append(names, st.name)
		}
		fmt.Fprintf(bw, "- node states: %s (see Degraded nodes)\n", strings.Join(names, ", "))
	}
	if r.stateIndex("healthy") >= 0 {
		r.writeHealthy(bw)
	}
	if r.degraded() {
		r.writeDegraded(bw)
	}
	fmt.Fprintf(bw, "\n### How to read it\n\n")
	fmt.Fprintln(bw, "- ops/s: grants per second over the measured window; ÷ redsync: the same relative to redsync's in that table.")
	fmt.Fprintln(bw, "- p50/p99/max: acquire latency, from the moment a goroutine wants the lock to its grant, across the times its library gives up and it calls again.")
	fmt.Fprintln(bw, "- Jain: fairness of the grant counts over goroutines (1 = equal shares, 1/n = one goroutine takes all); Jain clients: the same over the clients of a case on several (– on one), the fairness between processes.")
	fmt.Fprintln(bw, "- overlaps: grants while another goroutine of the case still held the same key, summed over repetitions. Must be 0.")
	fmt.Fprintln(bw, "- CPU µs/op: user+system CPU time of the whole client process (harness included) per grant; the nodes' CPU is not in it.")
	fmt.Fprintln(bw, "- Redis cmds/op: commands the nodes ran per grant, summed over nodes (INFO total_commands_processed); commands a Lua script runs count too, so one EVALSHA of a GET+DEL script counts 3.")
	fmt.Fprintln(bw, "- ÷ uncontended: Redis cmds/op relative to the same library's on one goroutine without contention (goredlock's for its retry variant); – when that case did not run.")
	fmt.Fprintln(bw, "- gave up: lock calls that returned an error in the window (the library's retries ran out); the goroutine calls again.")
	if r.degraded() {
		r.writeDegradedHowTo(bw)
	}
	if slices.ContainsFunc(cfg.workloads, func(w workload) bool { return w.lockers() > 1 }) {
		fmt.Fprintln(bw, "- × N clients: the case opened N independent clients of the library, each with its own connections to the nodes, as N processes would (goredlock: a redlock.Client each over its own redis.FromURL servers; redsync: an instance each over its own pools; the others likewise), and dealt the goroutines over them round-robin. Rows without it ran on one client.")
	}
	fmt.Fprintf(bw, "\n### The libraries\n\n")
	for _, p := range cfg.peers {
		fmt.Fprintf(bw, "- %s: %s\n", p.label(cfg.settings), p.about)
	}
	return bw.Flush()
}

// writeHealthy writes a table per workload of the healthy state's rows.
func (r *results) writeHealthy(bw *bufio.Writer) {
	cfg := r.cfg
	base := r.peerIndex("redsync") // the row the others are compared with
	for wi, wl := range cfg.workloads {
		fmt.Fprintf(bw, "\n### %s\n\n", wl.title)
		fmt.Fprintln(bw, "| library | ops/s | ÷ redsync | p50 | p99 | max | Jain | Jain clients | overlaps | CPU µs/op | Redis cmds/op | ÷ uncontended | gave up |")
		fmt.Fprintln(bw, "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
		baseOps := 0.0
		if br, ok := r.row(base, wi); ok {
			baseOps = br.ops
		}
		var notes []string
		for pi := range cfg.peers {
			rw, ok := r.row(pi, wi)
			if !ok {
				if why := r.skips[[2]int{pi, wi}]; why != "" {
					notes = append(notes, fmt.Sprintf("%s: not run (%s)", cfg.peers[pi].label(cfg.settings), why))
				}
				continue
			}
			rel := "–"
			if baseOps > 0 {
				rel = fmtRatio(rw.ops / baseOps)
			}
			vsIdle := "–"
			if idle, ok := r.uncontendedCmds(pi); ok {
				vsIdle = fmtRatio(rw.cmds / idle)
			}
			jainClients := "–"
			if rw.clients > 1 {
				jainClients = fmt.Sprintf("%.2f", rw.jainClients)
			}
			fmt.Fprintf(bw, "| %s | %s | %s | %s | %s | %s | %.2f | %s | %d | %.0f | %.1f | %s | %d |\n",
				rw.label, fmtCount(rw.ops), rel, fmtDur(rw.p50), fmtDur(rw.p99), fmtDur(rw.max),
				rw.jain, jainClients, rw.overlaps, float64(rw.cpu)/float64(time.Microsecond), rw.cmds, vsIdle, rw.gaveUp)
			if rw.conns > 0 {
				notes = append(notes, fmt.Sprintf("%s: the nodes accepted %d new connections while it was measured (median; a pool that keeps fewer connections idle than it uses redials)", rw.label, rw.conns))
			}
			if rw.unlockErrs > 0 {
				notes = append(notes, fmt.Sprintf("%s: %d failed unlock(s) over all repetitions", rw.label, rw.unlockErrs))
			}
			if rw.firstErr != "" {
				notes = append(notes, fmt.Sprintf("%s, first error: %s", rw.label, rw.firstErr))
			}
		}
		if len(notes) > 0 {
			fmt.Fprintln(bw)
			for _, n := range notes {
				fmt.Fprintf(bw, "- %s\n", n)
			}
		}
	}
}

// commandLine is how to run this again.
func commandLine(args []string) string {
	parts := []string{"cd bench && go run ."}
	safe := regexp.MustCompile(`^[A-Za-z0-9_./:=,+-]+$`)
	for _, a := range args {
		if !safe.MatchString(a) {
			a = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
		parts = append(parts, a)
	}
	return strings.Join(parts, " ")
}

func cpuModel() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return "CPU model unknown"
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "CPU model unknown"
}

func fmtCount(x float64) string {
	s := fmt.Sprintf("%.0f", x)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// fmtRatio prints x with two decimals, or two significant digits below 0.1
// so that a collapse does not read as 0.00.
func fmtRatio(x float64) string {
	if x > 0 && x < 0.1 {
		return fmt.Sprintf("%.2g", x)
	}
	return fmt.Sprintf("%.2f", x)
}

// fmtDur prints d with about three significant digits.
func fmtDur(d time.Duration) string {
	switch {
	case d <= 0:
		return "–"
	case d < time.Millisecond:
		return fmt.Sprintf("%.0f µs", float64(d)/float64(time.Microsecond))
	case d < 10*time.Millisecond:
		return fmt.Sprintf("%.2f ms", float64(d)/float64(time.Millisecond))
	case d < 100*time.Millisecond:
		return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond))
	case d < time.Second:
		return fmt.Sprintf("%.0f ms", float64(d)/float64(time.Millisecond))
	default:
		return fmt.Sprintf("%.2f s", d.Seconds())
	}
}
