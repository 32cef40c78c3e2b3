package main

import (
	"bufio"
	"fmt"
	"time"
)

// writeDegraded writes a table per workload with a row per state and
// library: the healthy rows (when that state ran) first, then each
// degraded state's, every figure beside goredlock's healthy row.
func (r *results) writeDegraded(bw *bufio.Writer) {
	cfg := r.cfg
	fmt.Fprintf(bw, "\n## Degraded nodes: %d nodes, a minority silent or dead\n", cfg.nodes)
	for _, st := range cfg.states {
		fmt.Fprintf(bw, "\n- %s: %s", st.name, st.title)
	}
	fmt.Fprintln(bw)
	healthy, gored, redsync := r.stateIndex("healthy"), r.peerIndex("goredlock"), r.peerIndex("redsync")
	if healthy < 0 || gored < 0 {
		fmt.Fprintln(bw, "\nNo healthy goredlock row in this run (-states without healthy, or -peers without goredlock): the ÷ goredlock healthy columns are empty.")
	}
	for wi, wl := range cfg.workloads {
		fmt.Fprintf(bw, "\n### %s, by node state\n\n", wl.title)
		fmt.Fprintln(bw, "| state | library | ops/s | ÷ goredlock healthy | ÷ redsync | p50 | p50 ÷ goredlock healthy | p99 | CPU µs/op | overlaps | gave up |")
		fmt.Fprintln(bw, "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
		var base row // goredlock's healthy row; zero when it did not run
		if rw, ok := r.rowIn(healthy, gored, wi); ok {
			base = rw
		}
		var notes []string
		for si, st := range cfg.states {
			rs, _ := r.rowIn(si, redsync, wi)
			for pi := range cfg.peers {
				rw, ok := r.rowIn(si, pi, wi)
				if !ok {
					continue
				}
				who := fmt.Sprintf("%s, %s", st.name, rw.label)
				if rw.runs == 0 {
					fmt.Fprintf(bw, "| %s | %s | cannot start | – | – | – | – | – | – | – | – |\n", st.name, rw.label)
					notes = append(notes, fmt.Sprintf("%s: cannot start: %s", who, rw.startErr))
					continue
				}
				p50Ratio, cpu := "–", "–" // no grant, no latency nor CPU per grant
				if rw.p50 > 0 {
					p50Ratio = ratio(float64(rw.p50), float64(base.p50))
				}
				if rw.cpu > 0 {
					cpu = fmt.Sprintf("%.0f", float64(rw.cpu)/float64(time.Microsecond))
				}
				fmt.Fprintf(bw, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %d | %d |\n",
					st.name, rw.label, fmtCount(rw.ops), ratio(rw.ops, base.ops), ratio(rw.ops, rs.ops),
					fmtDur(rw.p50), p50Ratio, fmtDur(rw.p99), cpu, rw.overlaps, rw.gaveUp)
				notes = append(notes, rowNotes(who, rw)...)
			}
		}
		for pi := range cfg.peers {
			if why := r.skips[[2]int{pi, wi}]; why != "" {
				notes = append(notes, fmt.Sprintf("%s: not run (%s)", cfg.peers[pi].label(cfg.settings), why))
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

// rowNotes are the notes under a degraded table about one row.
func rowNotes(who string, rw row) []string {
	var notes []string
	if rw.cannotStart > 0 {
		notes = append(notes, fmt.Sprintf("%s: cannot start in %d of %d repetitions: %s", who, rw.cannotStart, rw.cannotStart+rw.runs, rw.startErr))
	}
	if rw.stuck > 0 {
		notes = append(notes, fmt.Sprintf("%s: %d goroutine(s) still in a library call %v after the window closed, summed over repetitions", who, rw.stuck, stuckAfter))
	}
	if rw.abandoned > 0 {
		notes = append(notes, fmt.Sprintf("%s: %d goroutine(s) still in a library call %v after the nodes answered again: the case went on without them", who, rw.abandoned, abandonAfter))
	}
	if rw.closeStuck > 0 {
		notes = append(notes, fmt.Sprintf("%s: closing the clients took over %v in %d repetition(s): the case went on without waiting", who, closeWait, rw.closeStuck))
	}
	if rw.unlockErrs > 0 {
		notes = append(notes, fmt.Sprintf("%s: %d failed unlock(s) over all repetitions", who, rw.unlockErrs))
	}
	if rw.firstErr != "" {
		notes = append(notes, fmt.Sprintf("%s, first error: %s", who, rw.firstErr))
	}
	return notes
}

// ratio is x/base for the tables; – without a base.
func ratio(x, base float64) string {
	if base <= 0 {
		return "–"
	}
	return fmtRatio(x / base)
}

func (r *results) writeDegradedHowTo(bw *bufio.Writer) {
	fmt.Fprintln(bw, "- Degraded nodes: every case of a degraded state sets the state up itself, before the library's clients are created (silent-mid: halfway through the measured window), and undoes it after the case (SIGCONT, or a restart on the same port), waiting until every node answers PING before the next case; the nodes put out of action are the last ones. A dead node's port is held bound without listening, so connections to it are refused.")
	fmt.Fprintln(bw, "- ÷ goredlock healthy: ops/s, or p50, relative to goredlock's in the healthy state of the same table (same run); ÷ redsync: ops/s relative to redsync's in the same state.")
	fmt.Fprintf(bw, "- cannot start: the library's clients returned an error, or none within -start-wait (%v), while the state held; nothing else was measured.\n", r.cfg.startWait)
	fmt.Fprintf(bw, "- The degraded tables count no Redis commands (a silent node does not answer INFO). A lock call still running when the window closes is in no latency; the goroutines get %v to return before the nodes are put back, and %v more after, before the case goes on without them (the notes count them).\n", stuckAfter, abandonAfter)
}
