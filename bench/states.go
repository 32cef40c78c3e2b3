package main

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// nodeState is the state of the nodes a case runs in (-states): all
// healthy, or a minority of them silent or dead. The nodes put out of
// action are the last ones (rueidislock's client talks to the first node
// for what is not a lock key). Every case of a degraded state sets the
// state up itself and undoes it before the next case, so that each
// library's clients start in the same state and no case inherits another's.
type nodeState struct {
	name  string
	title string
	// silent nodes are stopped (SIGSTOP) before the clients are created.
	silent int
	// dead nodes are killed before the clients are created; their ports
	// refuse connections until they are started again after the case.
	dead int
	// silentMid nodes are stopped halfway through the measured window.
	silentMid int
}

func nodeStates() []nodeState {
	return []nodeState{
		{name: "healthy", title: "all nodes answer"},
		{name: "silent1", title: "one node silent (SIGSTOP) since before the clients start", silent: 1},
		{name: "silent2", title: "two nodes silent (SIGSTOP) since before the clients start", silent: 2},
		{name: "silent-mid", title: "one node silent (SIGSTOP) from the middle of the measured window", silentMid: 1},
		{name: "dead1", title: "one node dead (killed, its port refusing connections) since before the clients start", dead: 1},
	}
}

// down is how many nodes the state puts out of action.
func (st nodeState) down() int { return st.silent + st.dead + st.silentMid }

func (st nodeState) healthy() bool { return st.down() == 0 }

// checkStates refuses a state that leaves no majority on n nodes: the
// degraded rows measure the cost of a failed minority.
func checkStates(sts []nodeState, n int) error {
	for _, st := range sts {
		if st.healthy() {
			continue
		}
		if !statesSupported {
			return fmt.Errorf("%s: degraded node states need SIGSTOP and SIGCONT (unix)", st.name)
		}
		if k := st.down(); n < 2*k+1 {
			return fmt.Errorf("%s puts %d of %d nodes out of action, no minority: use -nodes %d or more", st.name, k, n, 2*k+1)
		}
	}
	return nil
}

// faults puts the nodes in a state around one case, and back.
type faults struct {
	st       nodeState
	nodes    []*node
	counters *nodeCounters // redialled to a node started again
	touched  []*node       // paused or killed by this case
}

// last is the i-th node from the end.
func (f *faults) last(i int) *node { return f.nodes[len(f.nodes)-1-i] }

// before sets up what the state does before the clients are created.
func (f *faults) before() error {
	for i := 0; i < f.st.silent; i++ {
		nd := f.last(i)
		f.touched = append(f.touched, nd)
		if err := nd.pause(); err != nil {
			return err
		}
	}
	for i := 0; i < f.st.dead; i++ {
		nd := f.last(f.st.silent + i)
		f.touched = append(f.touched, nd)
		nd.kill()
	}
	return nil
}

// mid is what the state does halfway through the measured window.
func (f *faults) mid() error {
	for i := 0; i < f.st.silentMid; i++ {
		nd := f.last(i)
		f.touched = append(f.touched, nd)
		if err := nd.pause(); err != nil {
			return err
		}
	}
	return nil
}

// undo continues the paused nodes and starts the dead ones again, then
// waits until every node answers PING. It may run more than once.
func (f *faults) undo(ctx context.Context) error {
	var first error
	for _, nd := range f.touched {
		err := nd.resume()
		if err == nil && nd.dead {
			if err = nd.revive(ctx); err == nil && f.counters != nil {
				err = f.counters.redial(nd.addr)
			}
		}
		if err != nil && first == nil {
			first = err
		}
	}
	f.touched = nil
	if first != nil {
		return first
	}
	for _, nd := range f.nodes {
		if err := nd.ready(ctx, 10*time.Second); err != nil {
			return fmt.Errorf("after %s: %w", f.st.name, err)
		}
	}
	return nil
}

// stateNames is the list for -states' help.
func stateNames() string {
	var names []string
	for _, st := range nodeStates() {
		names = append(names, st.name)
	}
	return strings.Join(names, ",")
}
