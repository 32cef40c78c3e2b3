package transporttest

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/goredlock/goredlock/internal/redistest"
	"github.com/goredlock/goredlock/internal/testkit"
)

func contextBackground() context.Context { return context.Background() }

// ranked returns a token that carries a rank, as the redlock client's do
// (testkit.Ranked).
var ranked = testkit.Ranked

// counter counts the commands a node runs, scripts' commands included, as
// Redis's own statistics do (total_commands_processed counts them the same
// way), leaving out the commands of the count itself.
type counter struct {
	t *testing.T
	n *redistest.Node
}

// reset starts counting from zero.
func (c counter) reset() { c.n.MustDo("CONFIG", "RESETSTAT") }

// commandstats returns the commands run since reset, by name, as INFO
// commandstats has them: the INFO that reads them left out, those of
// earlier reads in.
func (c counter) commandstats() map[string]int {
	c.t.Helper()
	stats := redistest.Text(c.n.MustDo("INFO", "commandstats"))
	calls := map[string]int{}
	for _, line := range strings.Split(stats, "\r\n") {
		var cmd string
		var n int
		if _, err := fmt.Sscanf(strings.Replace(line, ":", " ", 1), "cmdstat_%s calls=%d,", &cmd, &n); err == nil {
			calls[cmd] = n
		}
	}
	return calls
}

// calls returns the commands run since reset, by name, but the count's
// own (CONFIG RESETSTAT, INFO).
func (c counter) calls() map[string]int {
	c.t.Helper()
	calls := c.commandstats()
	delete(calls, "config|resetstat")
	delete(calls, "info")
	return calls
}

// infos returns how many INFO commands ran since reset, the one that
// reads them left out.
func (c counter) infos() int {
	c.t.Helper()
	return c.commandstats()["info"]
}

// measure counts the commands of run, which may reset the count itself.
// A client that spreads keyed commands over connections it opens when
// first used (rueidis and valkey-go pick one of several at random for
// each) can open one during the count: the handshake (HELLO) is the
// client's, not run's, so run is measured again, up to five times, until
// it opens none.
func (c counter) measure(run func()) map[string]int {
	c.t.Helper()
	var calls map[string]int
	for try := 0; try < 5; try++ {
		c.reset()
		run()
		if calls = c.calls(); calls["hello"] == 0 {
			break
		}
	}
	return calls
}

// sum is the number of commands in calls.
func sum(calls map[string]int) int {
	n := 0
	for _, k := range calls {
		n += k
	}
	return n
}

// total returns how many commands ran since reset, and resets.
func (c counter) total() int {
	c.t.Helper()
	n := sum(c.calls())
	c.reset()
	return n
}

// awaitClosed fails t unless ch is closed within d.
func awaitClosed(t *testing.T, ch <-chan struct{}, d time.Duration, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(d):
		t.Fatalf("%s: not within %v", what, d)
	}
}

// isClosed reports whether ch is closed, without waiting.
func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// must fails t on err.
func must(t *testing.T, what string, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// want fails t unless a call returned (want, nil).
func want(t *testing.T, what string, want bool) func(bool, error) {
	t.Helper()
	return func(got bool, err error) {
		t.Helper()
		must(t, what, err)
		if got != want {
			t.Fatalf("%s = %v, want %v", what, got, want)
		}
	}
}

// eventually retries cond every 20 ms for up to d.
func eventually(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(d); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, d)
		}
	}
}
