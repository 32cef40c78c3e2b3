package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goredlock/goredlock/internal/redistest"
	"github.com/goredlock/goredlock/redlock"
)

// TestConcurrentRunsNeverOverlap starts four runs of a job at once, each
// willing to wait its turn: every one runs, one at a time.
//
// The tests whose point is not the lock's expiry use a 10 s TTL: each
// server then has 500 ms to answer (5% of the TTL), which a busy machine
// does not miss, where a 1 s TTL's 50 ms made a server "fail" the first
// attempt and say so on stderr.
func TestConcurrentRunsNeverOverlap(t *testing.T) {
	t.Parallel()
	_, environ, dir := jobCluster(t)
	// mkdir fails if another COMMAND is inside.
	job := script(`mkdir "$D/in" || echo overlap >> "$D/log"; sleep 0.15; rmdir "$D/in"; echo ran >> "$D/log"`)
	var ps []*proc
	for range 4 {
		ps = append(ps, start(t, environ, append([]string{"run", "--ttl", "10s", "--wait", "15s", "job", "--"}, job...)...))
	}
	for _, p := range ps {
		r := p.wait(t)
		assert.Equal(t, exitOK, r.code, r.stderr)
	}
	assert.Equal(t, strings.Repeat("ran\n", 4), readFile(t, filepath.Join(dir, "log")))
}

// TestSecondRunIsTurnedAway: of two runs started together without --wait,
// one runs and the other exits 75, naming the lock, without running.
func TestSecondRunIsTurnedAway(t *testing.T) {
	t.Parallel()
	c, environ, dir := jobCluster(t)
	job := script(`echo ran >> "$D/log"; ` + waiting)
	a := start(t, environ, append([]string{"run", "--ttl", "10s", "job", "--"}, job...)...)
	b := start(t, environ, append([]string{"run", "--ttl", "10s", "job", "--"}, job...)...)
	waitFile(t, filepath.Join(dir, "started"), nil)

	// The loser ends on its own; the winner when its COMMAND is told to.
	var loser, winner *proc
	select {
	case <-a.done:
		loser, winner = a, b
	case <-b.done:
		loser, winner = b, a
	case <-time.After(procTimeout):
		t.Fatal("neither run was turned away")
	}
	r := loser.wait(t)
	assert.Equal(t, exitTempFail, r.code, r.stderr)
	assert.Equal(t, []string{`redlock: lock "job" is held elsewhere`}, r.lines())
	assert.Empty(t, r.stdout)

	touch(t, filepath.Join(dir, "go"))
	r = winner.wait(t)
	assert.Equal(t, exitOK, r.code, r.stderr)
	assert.Equal(t, "ran\n", readFile(t, filepath.Join(dir, "log")), "exactly one COMMAND ran")
	requireNoKey(t, c, "job")
}

// TestWaitTakesItsTurn: a run with --wait starts its COMMAND after the
// holder's has ended, not before.
func TestWaitTakesItsTurn(t *testing.T) {
	t.Parallel()
	_, environ, dir := jobCluster(t)
	first := start(t, environ, append([]string{"run", "--ttl", "10s", "job", "--"},
		script(`echo "first start" >> "$D/log"; `+waiting+`; echo "first end" >> "$D/log"`)...)...)
	waitFile(t, filepath.Join(dir, "started"), first)
	second := start(t, environ, append([]string{"run", "--ttl", "10s", "--wait", "15s", "job", "--"},
		script(`echo "second start" >> "$D/log"`)...)...)
	time.Sleep(300 * time.Millisecond) // the second is polling by now
	touch(t, filepath.Join(dir, "go"))

	r := first.wait(t)
	assert.Equal(t, exitOK, r.code, r.stderr)
	r = second.wait(t)
	assert.Equal(t, exitOK, r.code, r.stderr)
	assert.Empty(t, r.stderr)
	assert.Equal(t, "first start\nfirst end\nsecond start\n", readFile(t, filepath.Join(dir, "log")))
}

// TestWaitRunsOut exits 75 once --wait has passed with the lock still
// held elsewhere, without running COMMAND.
func TestWaitRunsOut(t *testing.T) {
	t.Parallel()
	_, environ, dir := jobCluster(t)
	release := holdLock(t, environ, dir)

	r := run(t, environ, append([]string{"run", "--wait", "500ms", "job", "--"}, script(`touch "$D/ran"`)...)...)
	assert.Equal(t, exitTempFail, r.code, r.stderr)
	assert.Equal(t, []string{`redlock: lock "job" is still held elsewhere after waiting 500ms`}, r.lines())
	assert.GreaterOrEqual(t, r.took, 500*time.Millisecond)
	assert.NoFileExists(t, filepath.Join(dir, "ran"))

	release()
}

// TestSkip exits 0 without running COMMAND when the lock is held
// elsewhere, also after --wait; but servers that do not answer are never
// a skip.
func TestSkip(t *testing.T) {
	t.Parallel()
	c, environ, dir := jobCluster(t)
	release := holdLock(t, environ, dir)

	skipper := append([]string{"run", "--skip", "job", "--"}, script(`touch "$D/ran"`)...)
	r := run(t, environ, skipper...)
	assert.Equal(t, exitOK, r.code)
	assert.Equal(t, []string{`redlock: lock "job" is held elsewhere; COMMAND skipped`}, r.lines())
	assert.Empty(t, r.stdout)
	r = run(t, environ, append([]string{"run", "--skip", "--wait", "300ms", "job", "--"}, script(`touch "$D/ran"`)...)...)
	assert.Equal(t, exitOK, r.code, r.stderr)
	assert.GreaterOrEqual(t, r.took, 300*time.Millisecond)
	assert.NoFileExists(t, filepath.Join(dir, "ran"))

	release()

	c.Nodes[1].Kill()
	c.Nodes[2].Kill()
	r = run(t, environ, skipper...)
	assert.Equal(t, exitUnavailable, r.code, r.stderr)
	require.Len(t, r.lines(), 1, r.stderr)
	assert.Contains(t, r.stderr, `redlock: lock "job" not acquired`)
	assert.NoFileExists(t, filepath.Join(dir, "ran"))
}

// TestHeldByTheLibrary: the key is NAME itself, so a lock taken by a
// program with a default redlock.Client turns the tool away, and the
// other way round.
func TestHeldByTheLibrary(t *testing.T) {
	t.Parallel()
	c, environ, dir := jobCluster(t)
	servers, err := openServers(c.URLs("")) // redis.FromURL, as a program would
	require.NoError(t, err)
	defer servers.close()
	client, err := redlock.New(servers.keyServers())
	require.NoError(t, err)
	defer client.Close()

	lock, err := client.TryAcquire(bg, "job", 10*time.Second)
	require.NoError(t, err)
	r := run(t, environ, "run", "job", "--", "true")
	assert.Equal(t, exitTempFail, r.code, r.stderr)
	require.NoError(t, lock.Release(bg))

	release := holdLock(t, environ, dir)
	_, err = client.TryAcquire(bg, "job", 10*time.Second)
	assert.ErrorIs(t, err, redlock.ErrHeldElsewhere)
	release()
}

// TestExitStatusPassesThrough exits with COMMAND's status, 128+N when
// signal N ended it, and leaves no key behind either way.
func TestExitStatusPassesThrough(t *testing.T) {
	t.Parallel()
	c, environ := cluster(t, 3)
	for body, want := range map[string]int{
		"exit 0":                         0,
		"exit 3":                         3,
		"exit 255":                       255,
		"kill -USR1 $$":                  exitSignal + int(syscall.SIGUSR1),
		"kill -KILL $$":                  exitSignal + int(syscall.SIGKILL),
		"kill -TERM $$":                  exitSignal + int(syscall.SIGTERM),
		"echo out; echo err >&2; exit 4": 4,
	} {
		r := run(t, environ, append([]string{"run", "job", "--"}, script(body)...)...)
		assert.Equal(t, want, r.code, "%s: %s", body, r.stderr)
		requireNoKey(t, c, "job")
	}
	r := run(t, environ, append([]string{"run", "job", "--"}, script("echo out; echo err >&2")...)...)
	assert.Equal(t, "out\n", r.stdout, "stdout is COMMAND's alone")
	assert.Equal(t, "err\n", r.stderr)
}

// TestEnvironmentReachesCommand: COMMAND gets redlock's environment with
// the lock's name and token, which is the value of the key on every
// server, in place of any inherited.
func TestEnvironmentReachesCommand(t *testing.T) {
	t.Parallel()
	c, environ := cluster(t, 3)
	dir := t.TempDir()
	environ = append(environ, "D="+dir, "EXTRA=kept", "REDLOCK_TOKEN=stale", "REDLOCK_FENCE=7")
	p := start(t, environ, append([]string{"run", "nightly", "--"},
		script(`echo "$REDLOCK_NAME $REDLOCK_TOKEN $EXTRA ${REDLOCK_FENCE-unset}"; `+waiting)...)...)
	waitFile(t, filepath.Join(dir, "started"), p)
	values := awaitHeld(t, c, "nightly")
	touch(t, filepath.Join(dir, "go"))
	r := p.wait(t)
	require.Equal(t, exitOK, r.code, r.stderr)
	assert.Empty(t, r.stderr)

	m := regexp.MustCompile(`^nightly ([0-9a-f]{16}\.[0-9a-f]{32}) kept unset\n$`).FindStringSubmatch(r.stdout)
	require.NotNil(t, m, "stdout: %q", r.stdout)
	assert.Equal(t, map[any]bool{m[1]: true}, values, "the key holds the token on every server")
	requireNoKey(t, c, "nightly")
}

// TestCommandThatCannotStartLeavesNoKey: a file that passes the lookup
// but that the kernel refuses to execute is found only once the lock is
// taken; redlock exits 126 and releases it.
func TestCommandThatCannotStartLeavesNoKey(t *testing.T) {
	t.Parallel()
	c, environ := cluster(t, 3)
	bad := filepath.Join(t.TempDir(), "garbage")
	require.NoError(t, os.WriteFile(bad, []byte("\x00\x01 not a program\n"), 0o700))
	r := run(t, environ, "run", "job", "--", bad)
	assert.Equal(t, exitCannotExec, r.code, r.stderr)
	require.Len(t, r.lines(), 1, r.stderr)
	assert.Contains(t, r.stderr, "redlock: cannot execute COMMAND")
	requireNoKey(t, c, "job")
}

// TestSignalReachesCommand: SIGTERM and SIGINT to redlock reach COMMAND;
// redlock exits with COMMAND's status, and the lock is free right after.
func TestSignalReachesCommand(t *testing.T) {
	t.Parallel()
	c, environ := cluster(t, 3)
	for _, tc := range []struct {
		sig  syscall.Signal
		body string
		want int
	}{
		// COMMAND handles the signal and exits 5.
		{syscall.SIGTERM, `trap 'echo got > "$D/got"; exit 5' TERM; ` + waiting, 5},
		// COMMAND dies of it.
		{syscall.SIGINT, `touch "$D/got"; ` + waiting, exitSignal + int(syscall.SIGINT)},
		{syscall.SIGHUP, `touch "$D/got"; ` + waiting, exitSignal + int(syscall.SIGHUP)},
	} {
		dir := t.TempDir()
		p := start(t, append(environ, "D="+dir), append([]string{"run", "--ttl", "10s", "job", "--"}, script(tc.body)...)...)
		waitFile(t, filepath.Join(dir, "started"), p)
		p.signal(t, tc.sig)
		r := p.wait(t)
		assert.Equal(t, tc.want, r.code, "%v: %s", tc.sig, r.stderr)
		assert.Empty(t, r.stderr)
		assert.FileExists(t, filepath.Join(dir, "got"))
		requireNoKey(t, c, "job")
		r = run(t, environ, "run", "job", "--", "true")
		assert.Equal(t, exitOK, r.code, "the lock is free right after: %s", r.stderr)
	}
}

// TestSignalWhileWaiting ends a run that is still waiting for the lock
// with 128+N, without running COMMAND.
func TestSignalWhileWaiting(t *testing.T) {
	t.Parallel()
	c, environ, dir := jobCluster(t)
	release := holdLock(t, environ, dir)
	before := clients(c.Nodes[0])
	waiter := start(t, environ, append([]string{"run", "--wait", "1m", "job", "--"}, script(`touch "$D/ran"`)...)...)
	// Signalled once it has connected to a server (it sets its signal
	// handler before), not after a fixed sleep: a process slow to start
	// under load took SIGTERM before its handler was set, and died of it.
	require.Eventually(t, func() bool { return clients(c.Nodes[0]) > before }, 30*time.Second, 10*time.Millisecond,
		"the waiter connects")
	waiter.signal(t, syscall.SIGTERM)
	r := waiter.wait(t)
	assert.Equal(t, exitSignal+int(syscall.SIGTERM), r.code, r.stderr)
	require.Len(t, r.lines(), 1, r.stderr)
	assert.Contains(t, r.stderr, `while waiting for lock "job"; COMMAND not run`)
	assert.NoFileExists(t, filepath.Join(dir, "ran"))
	release()
}

// TestLostLockStopsCommand pauses two of three servers under a running
// COMMAND: the lock cannot be extended, so redlock sends COMMAND SIGTERM
// before the lock runs out, and exits 70.
func TestLostLockStopsCommand(t *testing.T) {
	t.Parallel()
	c, environ, dir := jobCluster(t)
	// A TTL of 3 s, for a server timeout of 150 ms: at 1 s (50 ms) a
	// loaded machine failed the first grant.
	p := start(t, environ, append([]string{"run", "--ttl", "3s", "--grace", "5s", "job", "--"},
		script(`trap 'echo term > "$D/got"; exit 0' TERM; `+waiting)...)...)
	waitFile(t, filepath.Join(dir, "started"), p)
	paused := time.Now()
	pause(t, c.Nodes[0], c.Nodes[2])

	r := p.wait(t)
	assert.Equal(t, exitLost, r.code, r.stderr)
	assert.Contains(t, r.stderr, `redlock: lock "job" lost; sending SIGTERM to COMMAND, SIGKILL in 5s`)
	assert.Equal(t, "term\n", readFile(t, filepath.Join(dir, "got")))
	assert.Less(t, time.Since(paused), 6*time.Second, "lost within about a TTL")
}

// TestLostLockKillsAfterGrace: a COMMAND that ignores SIGTERM gets SIGKILL
// --grace later.
func TestLostLockKillsAfterGrace(t *testing.T) {
	t.Parallel()
	c, environ, dir := jobCluster(t)
	p := start(t, environ, append([]string{"run", "--ttl", "3s", "--grace", "400ms", "job", "--"},
		script(`trap '' TERM; touch "$D/started"; i=0; while [ $i -lt 1500 ]; do sleep 0.02; i=$((i+1)); done`)...)...)
	waitFile(t, filepath.Join(dir, "started"), p)
	pause(t, c.Nodes[1], c.Nodes[2])

	r := p.wait(t)
	assert.Equal(t, exitLost, r.code, r.stderr)
	assert.Contains(t, r.stderr, "redlock: COMMAND still running 400ms after SIGTERM; sending SIGKILL")
}

// TestFence follows the build: --fence is a usage error until the core
// can give fencing tokens, and then every run's $REDLOCK_FENCE is larger
// than the last.
func TestFence(t *testing.T) {
	t.Parallel()
	_, environ := cluster(t, 3)
	var last uint64
	for range 3 {
		r := run(t, environ, append([]string{"run", "--fence", "job", "--"}, script(`echo "$REDLOCK_FENCE"`)...)...)
		require.Equal(t, exitOK, r.code, r.stderr)
		var fence uint64
		_, err := fmt.Sscan(r.stdout, &fence)
		require.NoError(t, err, r.stdout)
		assert.Greater(t, fence, last)
		last = fence
	}
}

// TestFirstAttemptNamesFailingServers: a server that is down, or rejects
// the password, while the others grant the lock gets one line on stderr,
// without the password; COMMAND runs.
func TestFirstAttemptNamesFailingServers(t *testing.T) {
	t.Parallel()
	const right, wrong = "Right-pw-1234", "Wrong-pw-5678"
	c := redistest.Start(t, 3, redistest.WithPassword(right))
	down := redistest.Start(t, 1)
	down.Nodes[0].Kill()
	urls := []string{c.Nodes[0].URL(right), c.Nodes[1].URL(wrong), c.Nodes[2].URL(right)}
	r := run(t, env("REDLOCK_SERVERS="+strings.Join(urls, ",")), "run", "job", "--", "true")
	assert.Equal(t, exitOK, r.code, r.stderr)
	require.Len(t, r.lines(), 1, r.stderr)
	assert.Contains(t, r.stderr, "redlock: server "+c.Nodes[1].Addr()+" failed the first attempt: ")
	assert.Contains(t, r.stderr, "authentication failed")

	urls = []string{c.Nodes[0].URL(right), c.Nodes[1].URL(right), down.Nodes[0].URL(wrong), c.Nodes[2].URL(right)}
	r = run(t, env("REDLOCK_SERVERS="+strings.Join(urls, ",")), "run", "job", "--", "true")
	assert.Equal(t, exitOK, r.code, r.stderr)
	// A quorum of the others may decide the first attempt before the dead
	// server's refusal comes (no vote waits for a failed server): it is
	// then named by the first call it fails, the release's, if not as a
	// straggler of the first attempt. Either way once, and no other
	// server is named.
	var named []string
	for _, l := range r.lines() {
		if strings.Contains(l, "failed the first attempt") || strings.Contains(l, "key server failing") {
			named = append(named, l)
			assert.Contains(t, l, down.Nodes[0].Addr(), "only the dead server fails")
		}
	}
	require.NotEmpty(t, named, r.stderr)
	assert.Contains(t, named[0], "connection refused")
	for _, out := range []string{r.stdout, r.stderr} {
		assert.NotContains(t, out, wrong)
		assert.NotContains(t, out, right)
	}
}

// TestWaitStopsOnPermanentFailures: --wait does not retry what retrying
// cannot fix, a rejected password or a key of the wrong type: the run
// exits 69 at once, saying so.
func TestWaitStopsOnPermanentFailures(t *testing.T) {
	t.Parallel()
	const right, wrong = "Right-pw-9999", "Wrong-pw-0000"
	c := redistest.Start(t, 3, redistest.WithPassword(right))
	for name, tc := range map[string]struct {
		urls []string
		key  string
		want string
	}{
		"wrong password": {c.URLs(wrong), "job", "authentication failed"},
		"wrong type":     {c.URLs(right), "ahash", "WRONGTYPE"},
	} {
		if tc.key == "ahash" {
			for _, n := range c.Nodes {
				n.MustDo("HSET", tc.key, "f", "v")
			}
		}
		r := run(t, env("REDLOCK_SERVERS="+strings.Join(tc.urls, ",")), "run", "--wait", "15s", tc.key, "--", "true")
		assert.Equal(t, exitUnavailable, r.code, "%s: %s", name, r.stderr)
		assert.Less(t, r.took, 5*time.Second, name)
		require.Len(t, r.lines(), 1, "%s: %s", name, r.stderr)
		assert.Contains(t, r.stderr, tc.want, name)
		assert.Contains(t, r.stderr, "retrying cannot fix", name)
		assert.NotContains(t, r.stderr, wrong, name)
		assert.NotContains(t, r.stderr, right, name)
	}
}

// TestRunAfterAMajorityRestartedEmpty is rule 19 for the tool, a fresh
// process by nature: 3 of 5 nodes restart empty while another holder's
// lock (TTL 5 s) stands on the other two. run exits with the lock-held
// status without running COMMAND until the TTL has passed since the
// restart; with --no-quarantine the restarted majority grants it at once.
func TestRunAfterAMajorityRestartedEmpty(t *testing.T) {
	t.Parallel()
	c := redistest.Start(t, 5)
	for _, n := range c.Nodes[3:] {
		set(n, "cq", "held-by-another", 5*time.Second)
	}
	for _, n := range c.Nodes[:3] {
		n.Restart()
	}
	environ := env("REDLOCK_SERVERS=" + strings.Join(c.URLs(""), ","))
	r := run(t, environ, "run", "--ttl", "5s", "cq", "--", "echo", "second")
	assert.Equal(t, exitTempFail, r.code, r.stderr)
	assert.Empty(t, r.stdout, "COMMAND did not run")
	assert.Contains(t, r.stderr, "held elsewhere")

	r = run(t, environ, "run", "--ttl", "5s", "--no-quarantine", "cq", "--", "echo", "second")
	assert.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, "second\n", r.stdout, "the opt-out counts the restarted majority: the overlap the quarantine prevents")
}

// clients is how many connections node has open.
func clients(node *redistest.Node) int {
	info := string(node.MustDo("INFO", "clients").([]byte))
	_, after, _ := strings.Cut(info, "connected_clients:")
	n, _ := strconv.Atoi(strings.TrimSpace(strings.SplitN(after, "\n", 2)[0]))
	return n
}
