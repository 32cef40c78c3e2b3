package chaos

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/goredlock/goredlock/internal/layout"
	"github.com/goredlock/goredlock/internal/redistest"
)

// faults injects a scenario's faults into its nodes, through redistest
// for the processes and the proxies for the network. It runs on the
// test's goroutine (redistest ends the test from there on failure), and it
// keeps the rule that makes a restart without persistence safe: a killed
// node stays down for longer than the largest TTL, unless the scenario is
// the documented-unsafe one or its nodes fsync every write.
type faults struct {
	t     testing.TB
	rng   *rand.Rand
	nodes []*redistest.Node
	// replicas[i] is node i's replica (Scenario.Replicas); nil without.
	replicas []*redistest.Node
	jobs     []string   // the keys of the lock's long-held names (Load.LongNames: the clients have no prefix)
	paths    [][]*Proxy // paths[i][c] carries client c's traffic to node i
	clocks   *Clocks    // the nodes' clock rates; nil when the scenario keeps true time
	procs    *procs     // the clients that run as processes of their own; nil if none
	maxTTL   time.Duration
	end      time.Time
	// restartNow allows restarting a node at once: the unsafe scenario
	// without persistence, the safe ones with appendfsync always or with
	// the clients' quarantine of restarted nodes.
	restartNow bool
	// started is set once the clients run (begin): faults before that
	// are the state the clients are made in (Scenario.before).
	started bool

	paused  []bool
	downAt  []time.Time     // zero while the node runs
	refused []bool          // the node's paths refuse connects (down)
	cut     map[[2]int]bool // black-holed paths, by node and client
	pending []action
	count   map[string]int
}

// action is a fault's undoing, due at a time.
type action struct {
	at time.Time
	do func()
}

// downFor is how long past the largest TTL a killed node stays down, so
// that the keys it held have expired everywhere when it returns.
const downFor = 100 * time.Millisecond

// newFaults returns the faults of a run whose clients are not made yet;
// begin starts their schedule.
func newFaults(t testing.TB, rng *rand.Rand, nodes []*redistest.Node, paths [][]*Proxy, maxTTL time.Duration) *faults {
	return &faults{t: t, rng: rng, nodes: nodes, paths: paths, maxTTL: maxTTL,
		paused: make([]bool, len(nodes)), downAt: make([]time.Time, len(nodes)), refused: make([]bool, len(nodes)),
		cut: make(map[[2]int]bool), count: make(map[string]int)}
}

// begin starts the schedule, which lasts d, once the clients run.
func (f *faults) begin(d time.Duration) {
	f.started = true
	f.end = time.Now().Add(d)
}

// counted counts a fault injected once the clients run as what, and one
// injected before they were made (Scenario.before) as what " before the
// clients", which nothing the clients wrote can have been lost to.
func (f *faults) counted(what string) {
	if !f.started {
		what += " before the clients"
	}
	f.count[what]++
}

func (f *faults) n() int        { return len(f.nodes) }
func (f *faults) clients() int  { return len(f.paths[0]) }
func (f *faults) minority() int { return (f.n() - 1) / 2 }
func (f *faults) majority() int { return f.n()/2 + 1 }

// pick returns k distinct nodes at random.
func (f *faults) pick(k int) []int {
	return f.rng.Perm(f.n())[:k]
}

// between draws a duration uniformly from [lo, hi].
func (f *faults) between(lo, hi time.Duration) time.Duration {
	if hi <= lo {
		return lo
	}
	return lo + time.Duration(f.rng.Int64N(int64(hi-lo)+1))
}

// ttls returns x times the largest TTL.
func (f *faults) ttls(x float64) time.Duration { return time.Duration(x * float64(f.maxTTL)) }

// after schedules do to run d from now, from sleep or at the end.
func (f *faults) after(d time.Duration, do func()) {
	f.pending = append(f.pending, action{at: time.Now().Add(d), do: do})
}

// sleep waits for d, running the actions that fall due meanwhile. It
// returns false, early, once the scenario's time is up.
func (f *faults) sleep(d time.Duration) bool {
	until := time.Now().Add(d)
	for {
		f.runDue()
		now := time.Now()
		if !now.Before(f.end) {
			return false
		}
		if !now.Before(until) {
			return true
		}
		next := until
		if f.end.Before(next) {
			next = f.end
		}
		for _, a := range f.pending {
			if a.at.Before(next) {
				next = a.at
			}
		}
		time.Sleep(time.Until(next))
	}
}

func (f *faults) runDue() {
	now := time.Now()
	var later []action
	due := f.pending
	f.pending = nil
	for _, a := range due {
		if a.at.After(now) {
			later = append(later, a)
			continue
		}
		a.do()
	}
	f.pending = append(later, f.pending...)
}

// outage is one round of the scenarios that strike a set of nodes at
// once: fault on each of nodes, a wait drawn from [lo, hi], then undo on
// each. The wait is drawn after the faults, which may draw values of their
// own, as the scenarios drew them before outage took their place.
func (f *faults) outage(nodes []int, fault, undo func(i int), lo, hi time.Duration) {
	for _, i := range nodes {
		fault(i)
	}
	f.sleep(f.between(lo, hi))
	for _, i := range nodes {
		undo(i)
	}
}

func (f *faults) pause(i int) {
	if f.paused[i] || !f.downAt[i].IsZero() {
		return
	}
	f.nodes[i].Pause()
	f.paused[i] = true
	f.counted("pause")
}

func (f *faults) resume(i int) {
	if !f.paused[i] {
		return
	}
	f.nodes[i].Resume()
	f.paused[i] = false
}

// kill ends node i with SIGKILL; revive brings it back no sooner than the
// largest TTL later.
func (f *faults) kill(i int) {
	if !f.downAt[i].IsZero() {
		return
	}
	f.nodes[i].Kill()
	f.paused[i] = false
	f.downAt[i] = time.Now()
	f.counted("kill")
}

// down kills node i, as kill does, and closes its port on every path:
// the clients' connects are refused, as by a host whose server is dead.
// revive brings both back.
func (f *faults) down(i int) {
	f.kill(i)
	if f.refused[i] {
		return
	}
	for _, p := range f.paths[i] {
		p.Refuse()
	}
	f.refused[i] = true
	f.counted("port closed")
}

// revive restarts killed node i, empty (or from its append-only file),
// first waiting out what is left of its time down, and opens its port
// again on every path if down closed it.
func (f *faults) revive(i int) {
	if f.downAt[i].IsZero() {
		return
	}
	if !f.restartNow {
		time.Sleep(time.Until(f.downAt[i].Add(f.maxTTL + downFor)))
	}
	f.nodes[i].Revive()
	f.downAt[i] = time.Time{}
	if f.refused[i] {
		for _, p := range f.paths[i] {
			if err := p.Reopen(); err != nil {
				f.t.Fatalf("chaos: node %d: %v", i, err)
			}
		}
		f.refused[i] = false
	}
}

// restart kills node i and starts it again at once: unsafe without
// persistence or the quarantine, which only the scenarios that restart
// at once may do.
func (f *faults) restart(i int) {
	if !f.restartNow {
		f.t.Fatalf("chaos: scenario restarts node %d at once, which only the restart scenarios may do", i)
	}
	if !f.downAt[i].IsZero() {
		return
	}
	f.nodes[i].Restart()
	f.paused[i] = false
	f.count["restart now"]++
}

func (f *faults) latency(i int, d time.Duration) {
	for _, p := range f.paths[i] {
		p.SetLatency(d)
	}
	if d > 0 {
		f.count["latency"]++
	}
}

func (f *faults) blackHole(i int) {
	for _, p := range f.paths[i] {
		p.BlackHole()
	}
	f.count["black hole"]++
}

// heal ends the black hole on every path to node i, those cut one by one
// included.
func (f *faults) heal(i int) {
	for c, p := range f.paths[i] {
		p.Heal()
		delete(f.cut, [2]int{i, c})
	}
}

func (f *faults) reset(i int) {
	for _, p := range f.paths[i] {
		p.Reset()
	}
	f.count["reset"]++
}

// cutOff black-holes client c's path to node i alone: c no longer hears
// from node i while the other clients do.
func (f *faults) cutOff(c, i int) {
	if f.cut[[2]int{i, c}] {
		return
	}
	f.paths[i][c].BlackHole()
	f.cut[[2]int{i, c}] = true
}

// mend heals client c's path to node i.
func (f *faults) mend(c, i int) {
	f.paths[i][c].Heal()
	delete(f.cut, [2]int{i, c})
}

// skew makes node i's clock run at rate.
func (f *faults) skew(i int, rate float64) {
	if f.clocks == nil {
		f.t.Fatalf("chaos: scenario skews node %d's clock, but its clients do not keep the nodes' time", i)
	}
	if f.clocks.Rate(i) != rate {
		f.clocks.Set(i, rate)
		f.count["clock rate"]++
	}
}

// healAll runs what is pending and ends every fault: the network is
// healed (held bytes delivered), paused nodes resume and killed ones come
// back once their time down is over.
func (f *faults) healAll() {
	slices.SortFunc(f.pending, func(a, b action) int { return a.at.Compare(b.at) })
	for _, a := range f.pending {
		a.do() // what it undoes, revive included, keeps its own timing rules
	}
	f.pending = nil
	for i := range f.nodes {
		f.latency(i, 0)
		f.heal(i)
		f.resume(i)
		f.revive(i)
		if f.clocks != nil {
			f.clocks.Set(i, 1)
		}
	}
	if f.procs != nil {
		if err := f.procs.contAll(); err != nil {
			f.t.Errorf("chaos: %v", err)
		}
	}
}

// failover promotes the replicas of nodes (again, for a fault that did
// not cut them first) and points every path to those nodes at them at
// once, resetting the connections as a failover does, and then kills
// their old masters (SIGKILL), which come back empty as the new masters'
// replicas: from that moment the clients' connections to all of those
// nodes lead to the new masters.
func (f *faults) failover(nodes []int) {
	for _, i := range nodes {
		f.replicas[i].MustDo("REPLICAOF", "NO", "ONE")
	}
	for _, i := range nodes {
		for _, p := range f.paths[i] {
			p.Retarget(f.replicas[i].Addr())
		}
	}
	for _, i := range nodes {
		old, next := f.nodes[i], f.replicas[i]
		old.Kill()
		old.Revive()
		old.ReplicaOf(next)
		f.nodes[i], f.replicas[i] = next, old
		f.counted("failover")
	}
}

// jobValues reads the keys of the lock's long-held names on each of
// nodes (one MGET each): what grantedSince compares with. Nil without
// such names.
func (f *faults) jobValues(nodes []int) map[int][]any {
	if len(f.jobs) == 0 {
		return nil
	}
	args := make([]any, len(f.jobs))
	for j, name := range f.jobs {
		args[j] = name
	}
	values := make(map[int][]any, len(nodes))
	for _, i := range nodes {
		v, _ := f.nodes[i].MustDo("MGET", args...).([]any)
		values[i] = v
	}
	return values
}

// grantedSince reports whether one of those keys holds, on every one of
// nodes (a majority), one token it did not hold when seen was read: a
// grant since then (a job's, or now and then a short hold's), or a vote
// for one that waits for its replica's confirmation; not a promise to a
// waiter, not a minority's attempt, and not the mark a waiter adds to the
// holder's token (a '+', which the comparison leaves out).
func (f *faults) grantedSince(nodes []int, seen map[int][]any) bool {
	now := f.jobValues(nodes)
	token := func(values map[int][]any, i, j int) string {
		if j >= len(values[i]) {
			return ""
		}
		v, _ := values[i][j].([]byte)
		return strings.TrimSuffix(string(v), "+")
	}
	for j := range f.jobs {
		first := token(now, nodes[0], j)
		granted := first != "" && !layout.IsPromise(first)
		for _, i := range nodes {
			if v := token(now, i, j); v != first || v == token(seen, i, j) {
				granted = false
				break
			}
		}
		if granted {
			return true
		}
	}
	return false
}

// summary lists the faults injected, e.g. "black hole 12, pause 3".
func (f *faults) summary() string {
	if len(f.count) == 0 {
		return "none"
	}
	var parts []string
	for k, v := range f.count {
		parts = append(parts, fmt.Sprintf("%s %d", k, v))
	}
	slices.Sort(parts)
	return strings.Join(parts, ", ")
}
