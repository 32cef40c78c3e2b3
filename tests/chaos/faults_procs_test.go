//go:build linux

package chaos

import (
	"testing"
	"time"
)

// A test that ends half-way, with a client process stopped, leaves no
// process behind: the clean-up kills and waits for every one.
func TestProcsEndWithTheTest(t *testing.T) {
	h := NewHistory()
	// Nothing reaches the store: no data Redis answers on port 1 either.
	store, err := ListenStore(h, historyOrigin(h), "127.0.0.1:1")
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	var ps *procs
	t.Run("ends half-way", func(t *testing.T) {
		// No node answers on port 1: the process tries and fails, on and on.
		ps = startProcs(t, h, []childConfig{
			{ID: 0, Addrs: []string{"127.0.0.1:1"}, Store: store.Addr(), Names: []string{"U0"}, Load: procLoad(time.Second)},
			{ID: 1, Addrs: []string{"127.0.0.1:1"}, Store: store.Addr(), Names: []string{"F0"}, Load: procLoad(time.Second)},
		})
		if err := ps.stop(ps.list[1]); err != nil { // only SIGKILL ends it now
			t.Fatal(err)
		}
		// The subtest ends here, its processes still running (one of them
		// stopped): its clean-up must end them.
	})
	if ps == nil || len(ps.list) != 2 {
		t.Fatal("the processes did not start")
	}
	for _, p := range ps.list {
		select {
		case <-p.exited:
		default:
			t.Fatalf("client process %d still running after its test ended", p.id)
		}
		// Killed by the clean-up, not ended by itself.
		if p.cmd.ProcessState == nil || p.cmd.ProcessState.String() != "signal: killed" {
			t.Errorf("client process %d: %v, want it killed and waited for (stderr: %s)", p.id, p.cmd.ProcessState, clip(p.stderr.String(), 500))
		}
	}
}
