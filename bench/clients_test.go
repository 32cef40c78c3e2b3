package main

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestClientOf checks the dealing: round-robin, equal shares when the
// clients divide the goroutines, never two more on one client than on
// another.
func TestClientOf(t *testing.T) {
	for _, tc := range []struct {
		goroutines, clients int
		want                []int // goroutines per client
	}{
		{1, 1, []int{1}},
		{8, 1, []int{8}},
		{8, 8, []int{1, 1, 1, 1, 1, 1, 1, 1}},
		{64, 8, []int{8, 8, 8, 8, 8, 8, 8, 8}},
		{10, 4, []int{3, 3, 2, 2}},
	} {
		got := make([]int, tc.clients)
		for g := 0; g < tc.goroutines; g++ {
			c := clientOf(g, tc.clients)
			if g < tc.clients && c != g {
				t.Errorf("%d over %d: goroutine %d dealt to client %d, want %d", tc.goroutines, tc.clients, g, c, g)
			}
			got[c]++
		}
		for c := range got {
			if got[c] != tc.want[c] {
				t.Errorf("%d over %d: shares %v, want %v", tc.goroutines, tc.clients, got, tc.want)
				break
			}
		}
	}
}

func TestWorkloadLockers(t *testing.T) {
	for _, tc := range []struct {
		w    workload
		want int
	}{
		{workload{goroutines: 8}, 1}, // clients not filled in: one
		{workload{goroutines: 8, clients: 1}, 1},
		{workload{goroutines: 64, clients: 8}, 8},
		{workload{goroutines: 1, clients: 8}, 1}, // no client without a goroutine
	} {
		if got := tc.w.lockers(); got != tc.want {
			t.Errorf("%+v: %d lockers, want %d", tc.w, got, tc.want)
		}
	}
}

// TestParseClients checks -clients: it is checked, the default keeps one
// client for the workloads without a count of their own, and it never
// changes the 8c-* workloads, whose names say their count.
func TestParseClients(t *testing.T) {
	for _, args := range [][]string{{"-clients=0"}, {"-clients=-2"}, {"-clients=x"}} {
		if _, err := parse(args); err == nil {
			t.Errorf("parse(%q) accepted", args)
		}
	}
	lockers := func(cfg config) map[string]int {
		m := map[string]int{}
		for _, w := range cfg.workloads {
			m[w.name] = w.lockers()
		}
		return m
	}
	titles := func(cfg config) map[string]string {
		m := map[string]string{}
		for _, w := range cfg.workloads {
			m[w.name] = w.title
		}
		return m
	}
	def, err := parse(nil)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int{"1-distinct": 1, "64-distinct": 1, "8-one-key-hold": 1, "64-one-key": 1, "64-one-key-hold": 1, "8c-one-key-hold": 8,
		"8c-64-one-key": 8, "8c-64-one-key-hold": 8}
	if got := lockers(def); !equalMaps(got, want) {
		t.Errorf("default clients per workload = %v, want %v", got, want)
	}
	four, err := parse([]string{"-clients=4", "-workloads=1-distinct,64-one-key,8c-64-one-key"})
	if err != nil {
		t.Fatal(err)
	}
	want = map[string]int{"1-distinct": 1, "64-one-key": 4, "8c-64-one-key": 8}
	if got := lockers(four); !equalMaps(got, want) {
		t.Errorf("-clients=4: clients per workload = %v, want %v", got, want)
	}
	dt, ft := titles(def), titles(four)
	if ft["1-distinct"] != dt["1-distinct"] || ft["8c-64-one-key"] != dt["8c-64-one-key"] {
		t.Errorf("-clients=4 retitled a workload it does not change: %q, %q", ft["1-distinct"], ft["8c-64-one-key"])
	}
	if !strings.HasSuffix(ft["64-one-key"], "dealt over 4 clients") {
		t.Errorf("-clients=4: 64-one-key is titled %q", ft["64-one-key"])
	}
}

func equalMaps(a, b map[string]int) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// TestCaseDealsOverIndependentClients runs a case over 8 clients of a
// peer that records its lockers: each was opened on its own, each was used
// by its goroutines, and each was closed.
func TestCaseDealsOverIndependentClients(t *testing.T) {
	addrs, counters := countedNode(t)
	var (
		mu     sync.Mutex
		opened []*countingLock
	)
	p := peer{name: "counting", open: func([]string, settings) (locker, error) {
		mu.Lock()
		defer mu.Unlock()
		l := &countingLock{}
		opened = append(opened, l)
		return l, nil
	}}
	w := workload{name: "8c-64-one-key", goroutines: 64, oneKey: true, clients: 8}
	// Long enough for every goroutine to run on a busy machine: a locker
	// that the goroutines were not dealt to gets no call however long.
	if _, err := runCase(context.Background(), p, w, addrs, settings{}, timing{duration: 2 * time.Second}, counters, "test"); err != nil {
		t.Fatal(err)
	}
	if len(opened) != 8 {
		t.Fatalf("opened %d lockers, want 8", len(opened))
	}
	for i, l := range opened {
		if l.calls.Load() == 0 || !l.closed.Load() {
			t.Errorf("locker %d: %d lock calls, closed %v", i, l.calls.Load(), l.closed.Load())
		}
	}
}

type countingLock struct {
	calls  atomic.Int64
	closed atomic.Bool
}

func (c *countingLock) lock(context.Context, string) (func(context.Context) error, error) {
	c.calls.Add(1)
	return func(context.Context) error { return nil }, nil
}

func (c *countingLock) close() error { c.closed.Store(true); return nil }

// TestPeersOpenIndependentClients checks that two clients of goredlock,
// and of redsync, share no connections: their key servers and pools are
// distinct objects. Nothing is dialled, so no server is needed.
func TestPeersOpenIndependentClients(t *testing.T) {
	addrs := []string{"127.0.0.1:1", "127.0.0.1:2", "127.0.0.1:3"}
	s := settings{ttl: 10 * time.Second, retry: time.Millisecond}
	g, err := openClients(goredlockPeer(), 2, addrs, s)
	if err != nil {
		t.Fatal(err)
	}
	defer closeClients(g) //nolint:errcheck // test cleanup
	g0, g1 := g[0].(*goredlock), g[1].(*goredlock)
	if g0.client == g1.client || len(g0.servers) != len(addrs) {
		t.Fatalf("goredlock clients: %p and %p, %d servers", g0.client, g1.client, len(g0.servers))
	}
	for i := range g0.servers {
		if g0.servers[i] == g1.servers[i] {
			t.Errorf("goredlock: both clients use key server %d", i)
		}
	}
	r, err := openClients(redsyncPeer(), 2, addrs, s)
	if err != nil {
		t.Fatal(err)
	}
	defer closeClients(r) //nolint:errcheck // test cleanup
	r0, r1 := r[0].(*redsyncLocker), r[1].(*redsyncLocker)
	if r0.rs == r1.rs {
		t.Error("redsync: both clients are one instance")
	}
	for i := range r0.pools {
		if r0.pools[i] == r1.pools[i] {
			t.Errorf("redsync: both clients use pool %d", i)
		}
	}
}

// TestQuickRunClients runs the smoke mode with 8 clients and checks that
// the rows say so and compare their commands with the uncontended ones.
func TestQuickRunClients(t *testing.T) {
	res, rows, out := quickRun(t, 1, "-peers=goredlock,redsync", "-workloads=1-distinct,8c-one-key-hold")
	for pi, rw := range rows {
		p := res.cfg.peers[pi]
		if rw.clients != 8 || rw.ops <= 0 || rw.overlaps != 0 {
			t.Errorf("%s: %+v", p.name, rw)
		}
		if _, ok := res.uncontendedCmds(pi); !ok {
			t.Errorf("%s: no uncontended commands count", p.name)
		}
		if !strings.Contains(out, "| "+p.name+" × 8 clients |") {
			t.Errorf("%s: no multi-client row in the table:\n%s", p.name, out)
		}
	}
}
