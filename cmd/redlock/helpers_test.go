package main

import (
	"bytes"
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/goredlock/goredlock/internal/redistest"
)

// procTimeout bounds every run of the binary: a hang fails the test
// instead of the whole package.
const procTimeout = 20 * time.Second

// result is how one run of redlock ended.
type result struct {
	code           int
	stdout, stderr string
	took           time.Duration
}

// lines returns stderr's lines.
func (r result) lines() []string {
	return strings.Split(strings.TrimSuffix(r.stderr, "\n"), "\n")
}

// proc is redlock running in the background.
type proc struct {
	cmd            *exec.Cmd
	stdout, stderr bytes.Buffer // read only after done
	began          time.Time
	done           chan struct{}
}

// env is the environment for a run: the test's own, without any REDLOCK_
// variable, plus extra. A race in the tool ends it at once.
func env(extra ...string) []string {
	var out []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "REDLOCK_") && !strings.HasPrefix(kv, "GORACE=") {
			out = append(out, kv)
		}
	}
	return append(append(out, "GORACE=halt_on_error=1 atexit_sleep_ms=0"), extra...)
}

// start runs redlock with args in the background; the test's end kills it
// if it still runs, and waits for it.
func start(t *testing.T, environ []string, args ...string) *proc {
	t.Helper()
	p := &proc{cmd: exec.Command(bin, args...), done: make(chan struct{})}
	p.cmd.Env = environ
	p.cmd.Stdout, p.cmd.Stderr = &p.stdout, &p.stderr
	p.began = time.Now()
	require.NoError(t, p.cmd.Start())
	go func() {
		defer close(p.done)
		_ = p.cmd.Wait() // ProcessState says how it ended
	}()
	t.Cleanup(func() {
		_ = p.cmd.Process.Kill()
		<-p.done
	})
	return p
}

// wait waits for p to end and returns how it did.
func (p *proc) wait(t *testing.T) result {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(procTimeout):
		_ = p.cmd.Process.Kill()
		<-p.done
		t.Fatalf("redlock %q still running after %v; stderr:\n%s", p.cmd.Args[1:], procTimeout, p.stderr.String())
	}
	r := result{code: p.cmd.ProcessState.ExitCode(), stdout: p.stdout.String(), stderr: p.stderr.String(), took: time.Since(p.began)}
	if strings.Contains(r.stderr, "DATA RACE") {
		t.Fatalf("race in redlock %q:\n%s", p.cmd.Args[1:], r.stderr)
	}
	return r
}

// signal sends sig to the running redlock.
func (p *proc) signal(t *testing.T, sig os.Signal) {
	t.Helper()
	require.NoError(t, p.cmd.Process.Signal(sig))
}

// run runs redlock with args to its end.
func run(t *testing.T, environ []string, args ...string) result {
	t.Helper()
	return start(t, environ, args...).wait(t)
}

// cluster starts n Redis nodes and returns them with the environment that
// points redlock at them.
func cluster(t *testing.T, n int, opts ...redistest.Option) (*redistest.Cluster, []string) {
	t.Helper()
	c := redistest.Start(t, n, opts...)
	return c, env("REDLOCK_SERVERS=" + strings.Join(c.URLs(""), ","))
}

// get reads key on node directly: nil when it is absent.
func get(node *redistest.Node, key string) any {
	v := node.MustDo("GET", key)
	if b, ok := v.([]byte); ok {
		return string(b)
	}
	return v
}

// awaitHeld waits until every node holds key, and returns the values it
// holds. A run starts COMMAND once a quorum granted the lock; the call to
// the last server may land a moment later on a busy machine (or, if it
// timed out, the next extension stores the key there), so a test that
// looks at every server waits for it.
func awaitHeld(t *testing.T, c *redistest.Cluster, key string) map[any]bool {
	t.Helper()
	values := map[any]bool{}
	require.Eventually(t, func() bool {
		clear(values)
		for _, n := range c.Nodes {
			values[get(n, key)] = true
		}
		return !values[nil]
	}, procTimeout, 10*time.Millisecond, "key %q never held on every server", key)
	return values
}

// pause stops nodes (SIGSTOP) until the test ends.
func pause(t *testing.T, nodes ...*redistest.Node) {
	for _, n := range nodes {
		n.Pause()
		t.Cleanup(n.Resume)
	}
}

// requireNoKey fails the test if any node still holds key.
func requireNoKey(t *testing.T, c *redistest.Cluster, key string) {
	t.Helper()
	for _, n := range c.Nodes {
		require.Nil(t, get(n, key), "key %q left on %s", key, n.Addr())
	}
}

// waitFile waits until path exists, or fails the test; p, when not nil,
// is the redlock whose stderr explains a failure.
func waitFile(t *testing.T, path string, p *proc) {
	t.Helper()
	deadline := time.Now().Add(procTimeout)
	for time.Now().Before(deadline) {
		if _, err := os.Stat(path); err == nil {
			return
		}
		if p != nil {
			select {
			case <-p.done:
				t.Fatalf("redlock ended before %s appeared: %+v", filepath.Base(path), p.wait(t))
			default:
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("%s did not appear", path)
}

// touch creates path.
func touch(t *testing.T, path string) {
	t.Helper()
	require.NoError(t, os.WriteFile(path, nil, 0o600))
}

// readFile returns path's content, "" when it does not exist.
func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return ""
	}
	require.NoError(t, err)
	return string(b)
}

// listener is a TCP server that counts connections and answers none: a
// server URL that proves redlock contacted no server.
type listener struct {
	net.Listener
	conns atomic.Int64
	wg    sync.WaitGroup
}

func listen(t *testing.T) *listener {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ln := &listener{Listener: l}
	ln.wg.Add(1)
	go func() {
		defer ln.wg.Done()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			ln.conns.Add(1)
			c.Close()
		}
	}()
	t.Cleanup(func() {
		l.Close()
		ln.wg.Wait()
	})
	return ln
}

// url is the listener's redis URL.
func (l *listener) url() string { return "redis://" + l.Addr().String() }

// script runs sh -c body with dir as $D: the COMMAND of most tests.
func script(body string) []string { return []string{"/bin/sh", "-c", body} }

// jobCluster starts three nodes and returns them with the environment
// that points redlock at them and gives the test's COMMANDs a directory of
// their own, $D, and that directory.
func jobCluster(t *testing.T) (*redistest.Cluster, []string, string) {
	t.Helper()
	c, environ := cluster(t, 3)
	dir := t.TempDir()
	return c, append(environ, "D="+dir), dir
}

// holdLock starts a run of job whose COMMAND (waiting, in dir, the $D of
// environ) holds the lock until release lets it end; release checks that
// the run then exits 0.
func holdLock(t *testing.T, environ []string, dir string) (release func()) {
	t.Helper()
	holder := start(t, environ, append([]string{"run", "job", "--"}, script(waiting)...)...)
	waitFile(t, filepath.Join(dir, "started"), holder)
	return func() {
		t.Helper()
		touch(t, filepath.Join(dir, "go"))
		require.Equal(t, exitOK, holder.wait(t).code)
	}
}

// waiting is a script body that marks that it started, then waits for the
// test to create $D/go: a COMMAND that holds the lock as long as the test
// wants. It gives up after about 30 s, so that a failed test leaves no
// process behind for long.
const waiting = `touch "$D/started"; i=0; while [ ! -e "$D/go" ] && [ $i -lt 1500 ]; do sleep 0.02; i=$((i+1)); done`

var bg = context.Background()

// removeAll empties dir, for the next round of a test that reuses it.
func removeAll(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
			return err
		}
	}
	return nil
}
