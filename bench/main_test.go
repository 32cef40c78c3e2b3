package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	redigo "github.com/gomodule/redigo/redis"
	"go.uber.org/goleak"

	"github.com/goredlock/goredlock/internal/layout"
	"github.com/goredlock/goredlock/internal/redistest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestQuickRun runs the smoke mode on one node with goredlock and the floor
// on the contended workload, and checks that the table has what it must.
func TestQuickRun(t *testing.T) {
	res, rows, out := quickRun(t, 0, "-peers=goredlock,floor", "-workloads=8-one-key-hold")
	for pi, rw := range rows {
		p := res.cfg.peers[pi]
		if rw.ops <= 0 || rw.p50 <= 0 || rw.cmds <= 0 || rw.jain <= 0 {
			t.Errorf("%s: nothing measured: %+v", p.name, rw)
		}
		if rw.overlaps != 0 {
			t.Errorf("%s: %d overlapping holders", p.name, rw.overlaps)
		}
		if !strings.Contains(out, "| "+p.name+" |") {
			t.Errorf("%s: no row in the table:\n%s", p.name, out)
		}
	}
	if !strings.Contains(out, "cd bench && go run . -quick -nodes=1") {
		t.Errorf("the table does not say how it was made:\n%s", out)
	}
}

// quickRun runs the smoke mode (-quick) on one node with the flags args
// adds, and returns its results, every peer's row of workload wl (by the
// peer's index) and the tables printed.
func quickRun(t *testing.T, wl int, args ...string) (*results, []row, string) {
	t.Helper()
	redistest.RequireServer(t)
	cfg, err := parse(append([]string{"-quick", "-nodes=1"}, args...))
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	res, err := run(context.Background(), cfg, &out, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	rows := make([]row, len(cfg.peers))
	for pi, p := range cfg.peers {
		rw, ok := res.row(pi, wl)
		if !ok {
			t.Fatalf("%s: no result for workload %d", p.name, wl)
		}
		rows[pi] = rw
	}
	return res, rows, out.String()
}

// testNodes starts n redis-server nodes that the test's end stops.
func testNodes(t *testing.T, n int) []*node {
	t.Helper()
	redistest.RequireServer(t)
	nodes, err := startNodes(context.Background(), "redis-server", n)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stopNodes(nodes) })
	return nodes
}

// countedNode starts one node for runCase, and the counters of the
// commands it is sent; the test's end closes and stops both.
func countedNode(t *testing.T) (addrs []string, counters *nodeCounters) {
	t.Helper()
	addrs = []string{testNodes(t, 1)[0].addr}
	counters, err := openCounters(addrs)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(counters.close)
	return addrs, counters
}

// TestOverlapsAreCounted checks the overlap counter with a "lock" that
// excludes nobody.
func TestOverlapsAreCounted(t *testing.T) {
	addrs, counters := countedNode(t)
	p := peer{name: "none", open: func([]string, settings) (locker, error) { return noLock{}, nil }}
	w := workload{name: "8-one-key-hold", goroutines: 8, oneKey: true, hold: time.Millisecond}
	sm, err := runCase(context.Background(), p, w, addrs, settings{}, timing{duration: 100 * time.Millisecond}, counters, "test")
	if err != nil {
		t.Fatal(err)
	}
	if sm.overlaps == 0 || sm.grants == 0 {
		t.Errorf("8 holders at once counted %d overlaps in %d grants", sm.overlaps, sm.grants)
	}
	if sm.cmdsPerOp != 0 {
		t.Errorf("a lock that sends nothing counted %.2f Redis commands per grant", sm.cmdsPerOp)
	}
}

type noLock struct{}

func (noLock) lock(context.Context, string) (func(context.Context) error, error) {
	return func(context.Context) error { return nil }, nil
}

func (noLock) close() error { return nil }

func TestStats(t *testing.T) {
	if got := jain([]float64{5, 5, 5, 5}); got != 1 {
		t.Errorf("jain of equal shares = %v, want 1", got)
	}
	if got := jain([]float64{8, 0, 0, 0}); got != 0.25 {
		t.Errorf("jain of one taker in 4 = %v, want 0.25", got)
	}
	var d []time.Duration
	for i := 100; i >= 1; i-- {
		d = append(d, time.Duration(i))
	}
	if l := summarize(d); l.p50 != 50 || l.p99 != 99 || l.max != 100 {
		t.Errorf("summarize(1..100) = %+v, want p50 50, p99 99, max 100", l)
	}
	for x, want := range map[float64]string{1: "1.00", 0.456: "0.46", 0.0046: "0.0046", 0: "0.00"} {
		if got := fmtRatio(x); got != want {
			t.Errorf("fmtRatio(%v) = %s, want %s", x, got, want)
		}
	}
	if got := median([]float64{3, 1, 2}); got != 2 {
		t.Errorf("median(3,1,2) = %v", got)
	}
	if got := median([]int64{4, 1, 3, 2}); got != 2 {
		t.Errorf("median(4,1,3,2) = %v, want 2 (integer mean of 2 and 3)", got)
	}
}

func TestParse(t *testing.T) {
	for _, args := range [][]string{
		{"-nodes=0"},
		{"-peers=goredlock,nosuch"},
		{"-workloads=nosuch"},
		{"-ttl=10ms"},
		{"extra"},
	} {
		if _, err := parse(args); err == nil {
			t.Errorf("parse(%q) accepted", args)
		}
	}
	cfg, err := parse([]string{"-peers=floor,goredlock"})
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.peers) != 2 || cfg.peers[0].name != "goredlock" || len(cfg.workloads) != 8 || cfg.reps != 3 {
		t.Errorf("parse: %d peers (first %s), %d workloads, %d reps", len(cfg.peers), cfg.peers[0].name, len(cfg.workloads), cfg.reps)
	}
}

// TestRueidislockKeysOnIndependentNodes checks the client-builder hook: key
// i of a lock lives on node i and nowhere else.
func TestRueidislockKeysOnIndependentNodes(t *testing.T) {
	nodes := testNodes(t, 3)
	var addrs []string
	for _, nd := range nodes {
		addrs = append(addrs, nd.addr)
	}
	l, err := rueidislockPeer().open(addrs, settings{ttl: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer l.close() //nolint:errcheck // test cleanup
	ctx := context.Background()
	unlock, err := l.lock(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	// All three keys are set soon: the third in the background after the
	// grant.
	deadline := time.Now().Add(5 * time.Second)
	for i, nd := range nodes {
		for {
			c, err := redigo.Dial("tcp", nd.addr)
			if err != nil {
				t.Fatal(err)
			}
			keys, err := redigo.Strings(c.Do("KEYS", "*"))
			c.Close()
			if err != nil {
				t.Fatal(err)
			}
			// The marker every node starts with (setHistory) is goredlock's.
			keys = slices.DeleteFunc(keys, func(k string) bool { return k == layout.IncarnationKey })
			want := fmt.Sprintf("rueidislock:%d:k", i)
			if len(keys) == 1 && keys[0] == want {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("node %d holds %q, want only %q", i, keys, want)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	if err := unlock(ctx); err != nil {
		t.Fatal(err)
	}
}
