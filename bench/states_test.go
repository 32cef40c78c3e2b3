package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	redigo "github.com/gomodule/redigo/redis"
)

// ping says whether the node at addr answers PING within d.
func ping(addr string, d time.Duration) error {
	c, err := redigo.Dial("tcp", addr, redigo.DialConnectTimeout(d), redigo.DialReadTimeout(d), redigo.DialWriteTimeout(d))
	if err != nil {
		return err
	}
	defer c.Close()
	_, err = c.Do("PING")
	return err
}

// requireHealthy fails the test unless every node answers PING, is neither
// paused nor dead, and holds no port.
func requireHealthy(t *testing.T, nodes []*node) {
	t.Helper()
	for i, nd := range nodes {
		if nd.paused || nd.dead || nd.hold != nil {
			t.Errorf("node %d (%s): paused %v, dead %v, port held %v", i, nd.addr, nd.paused, nd.dead, nd.hold != nil)
		}
		if err := ping(nd.addr, time.Second); err != nil {
			t.Errorf("node %d (%s) does not answer: %v", i, nd.addr, err)
		}
	}
}

// TestFaults checks what each state does to the nodes, and that undo puts
// them back: silent nodes accept connections and answer nothing, a dead
// node's port refuses connections, and afterwards every node answers on
// its address, the dead one from a new process.
func TestFaults(t *testing.T) {
	requireStates(t)
	nodes := testNodes(t, 5)
	var addrs []string
	for _, nd := range nodes {
		addrs = append(addrs, nd.addr)
	}
	counters, err := openCounters(addrs)
	if err != nil {
		t.Fatal(err)
	}
	defer counters.close()
	ctx := context.Background()
	for _, st := range nodeStates() {
		t.Run(st.name, func(t *testing.T) {
			pid := nodes[4].cmd.Process.Pid
			f := &faults{st: st, nodes: nodes, counters: counters}
			if err := f.before(); err != nil {
				t.Fatal(err)
			}
			if err := f.mid(); err != nil {
				t.Fatal(err)
			}
			down := map[int]bool{}
			for i := 0; i < st.down(); i++ {
				down[len(nodes)-1-i] = true
			}
			for i, nd := range nodes {
				err := ping(nd.addr, 200*time.Millisecond)
				switch {
				case !down[i] && err != nil:
					t.Errorf("node %d should answer: %v", i, err)
				case down[i] && st.dead > 0 && !errors.Is(err, syscall.ECONNREFUSED):
					t.Errorf("dead node %d: PING got %v, want connection refused", i, err)
				case down[i] && st.dead > 0 && nd.hold == nil:
					t.Errorf("dead node %d: its port is not held", i)
				case down[i] && st.dead == 0:
					var ne net.Error
					if !errors.As(err, &ne) || !ne.Timeout() {
						t.Errorf("silent node %d: PING got %v, want a read timeout", i, err)
					}
				}
			}
			if err := f.undo(ctx); err != nil {
				t.Fatal(err)
			}
			requireHealthy(t, nodes)
			if restarted := nodes[4].cmd.Process.Pid != pid; restarted != (st.dead > 0) {
				t.Errorf("node 4 restarted: %v", restarted)
			}
			if _, err := counters.read(); err != nil {
				t.Errorf("counters after %s: %v", st.name, err)
			}
		})
	}
}

// TestQuickRunStates runs the smoke mode on 3 nodes in silent1 and dead1
// with goredlock and rueidislock (which cannot start with a node that does
// not answer), and checks the rows of the degraded table and that the
// nodes are healthy afterwards.
func TestQuickRunStates(t *testing.T) {
	requireStates(t)
	nodes := testNodes(t, 3)
	cfg, err := parse([]string{"-quick", "-nodes=3", "-states=healthy,silent1,dead1", "-peers=goredlock,rueidislock", "-workloads=1-distinct", "-start-wait=1s"})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	start := time.Now()
	res, err := runOn(context.Background(), cfg, nodes, &out, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	requireHealthy(t, nodes)
	table := out.String()
	// 6 cases of 400 ms, each with at most stuckAfter, abandonAfter and
	// closeWait on top, or -start-wait alone; and the nodes put back.
	if limit := 6*(400*time.Millisecond+stuckAfter+abandonAfter+closeWait) + 10*time.Second; took > limit {
		t.Errorf("took %v, more than %v", took, limit)
	}
	gored, rueidis := res.peerIndex("goredlock"), res.peerIndex("rueidislock")
	for si, st := range cfg.states {
		rw, ok := res.rowIn(si, gored, 0)
		if !ok || rw.runs != 1 || rw.overlaps != 0 {
			t.Errorf("%s, goredlock: %+v", st.name, rw)
		}
		if !strings.Contains(table, "| "+st.name+" | goredlock | ") {
			t.Errorf("%s: no goredlock row in the table:\n%s", st.name, table)
		}
	}
	if rw, _ := res.rowIn(0, gored, 0); rw.ops <= 0 || rw.p50 <= 0 {
		t.Errorf("healthy goredlock measured nothing: %+v", rw)
	}
	if rw, _ := res.rowIn(0, rueidis, 0); rw.runs != 1 || rw.ops <= 0 {
		t.Errorf("healthy rueidislock: %+v", rw)
	}
	if rw, _ := res.rowIn(2, rueidis, 0); rw.cannotStart != 1 || !strings.Contains(rw.startErr, "refused") {
		t.Errorf("dead1 rueidislock: %+v, want cannot start, connection refused", rw)
	}
	if !strings.Contains(table, "| dead1 | rueidislock | cannot start |") {
		t.Errorf("no cannot-start row for rueidislock:\n%s", table)
	}
	// The healthy table is there as without -states.
	if !strings.Contains(table, "| goredlock | ") || !strings.Contains(table, "## Degraded nodes: 3 nodes") {
		t.Errorf("missing tables:\n%s", table)
	}
}

func TestParseStates(t *testing.T) {
	for _, args := range [][]string{
		{"-states=nosuch"},
		{"-nodes=3", "-states=silent2"}, // no majority left
		{"-nodes=1", "-states=silent1"},
		{"-nodes=2", "-states=dead1"},
		{"-start-wait=0s"},
	} {
		if _, err := parse(args); err == nil {
			t.Errorf("parse(%q) accepted", args)
		}
	}
	cfg, err := parse(nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.states) != 1 || !cfg.states[0].healthy() {
		t.Errorf("default states: %+v, want healthy alone", cfg.states)
	}
	cfg, err = parse([]string{"-states=dead1,silent-mid,healthy,silent2,silent1"})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, st := range cfg.states {
		names = append(names, st.name)
	}
	if got := strings.Join(names, ","); got != stateNames() {
		t.Errorf("states %s, want %s (their own order)", got, stateNames())
	}
}

// requireStates skips a test of the degraded states where they cannot
// run (no SIGSTOP), and fails it instead when CI is set: CI must run it.
func requireStates(t *testing.T) {
	t.Helper()
	if statesSupported {
		return
	}
	if os.Getenv("CI") != "" {
		t.Fatal("no SIGSTOP here, and CI must run the degraded states")
	}
	t.Skip("no SIGSTOP here")
}
