package main

import (
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goredlock/goredlock/internal/redistest"
)

// set stores key=value on node, with a TTL unless ttl is 0.
func set(node *redistest.Node, key, value string, ttl time.Duration) {
	args := []any{key, value}
	if ttl > 0 {
		args = append(args, "PX", ttl.Milliseconds())
	}
	node.MustDo("SET", args...)
}

// statusLines matches status's output against patterns, one per line.
func statusLines(t *testing.T, r result, patterns ...string) {
	t.Helper()
	lines := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
	require.Len(t, lines, len(patterns), r.stdout)
	for i, p := range patterns {
		assert.Regexp(t, regexp.MustCompile("^"+p+"$"), lines[i])
	}
}

// TestStatus reads each server's view of the lock, in the order given,
// and exits 1 only when a quorum holds it with one token.
func TestStatus(t *testing.T) {
	t.Parallel()
	c, environ, dir := jobCluster(t)
	a, b, d := regexp.QuoteMeta(c.Nodes[0].Addr()), regexp.QuoteMeta(c.Nodes[1].Addr()), regexp.QuoteMeta(c.Nodes[2].Addr())
	const held = `held \d+(\.\d+)?m?s`

	r := run(t, environ, "status", "job")
	assert.Equal(t, exitOK, r.code, r.stderr)
	assert.Empty(t, r.stderr)
	statusLines(t, r, a+" free", b+" free", d+" free")

	// Held by a run: every server, a TTL under --ttl, and exit 1.
	p := start(t, environ, append([]string{"run", "--ttl", "20s", "job", "--"}, script(waiting)...)...)
	waitFile(t, filepath.Join(dir, "started"), p)
	awaitHeld(t, c, "job")
	r = run(t, environ, "status", "job")
	assert.Equal(t, exitHeld, r.code, r.stderr)
	statusLines(t, r, a+" held 1\\d\\.\\d+s", b+" held 1\\d\\.\\d+s", d+" held 1\\d\\.\\d+s")
	assert.NotContains(t, r.stdout, get(c.Nodes[0], "job"), "a token is never printed")
	// The order of the lines is the order of --servers.
	urls := c.URLs("")
	r = run(t, environ, "status", "--servers", urls[2]+","+urls[0]+","+urls[1], "job")
	assert.Equal(t, exitHeld, r.code, r.stderr)
	statusLines(t, r, d+" "+held, a+" "+held, b+" "+held)
	touch(t, filepath.Join(dir, "go"))
	require.Equal(t, exitOK, p.wait(t).code)

	// Different tokens on two servers: no quorum, and the output tells
	// the holders apart. A key without a TTL says so.
	set(c.Nodes[0], "job", "token-a", 10*time.Second)
	set(c.Nodes[1], "job", "token-b", 0)
	r = run(t, environ, "status", "job")
	assert.Equal(t, exitOK, r.code, r.stderr)
	statusLines(t, r, a+" "+held+" by holder 1", b+` held \(no expiry\) by holder 2`, d+" free")
	assert.NotContains(t, r.stdout, "token-")

	// One server down: the two that answer are free, so no quorum can
	// hold the lock...
	c.Nodes[0].MustDo("DEL", "job")
	c.Nodes[1].Kill()
	r = run(t, environ, "status", "job")
	assert.Equal(t, exitOK, r.code, r.stderr)
	statusLines(t, r, a+" free", b+" error: connecting: .*connection refused", d+" free")

	// ...but one holding and one down could be a quorum: too few to tell.
	set(c.Nodes[2], "job", "y", 10*time.Second)
	r = run(t, environ, "status", "job")
	assert.Equal(t, exitUnavailable, r.code, r.stderr)
	assert.Equal(t, []string{`redlock: could not read lock "job" on 1 of 3 servers (see their errors): too few to tell whether a quorum (2) holds it`}, r.lines())
	statusLines(t, r, a+" free", b+" error: .*", d+" "+held)

	// Two down: fewer than a quorum answered.
	c.Nodes[2].Kill()
	r = run(t, environ, "status", "job")
	assert.Equal(t, exitUnavailable, r.code, r.stderr)
	statusLines(t, r, a+" free", b+" error: .*", d+" error: .*")
}

// TestStatusHeldDespiteAFailure: a quorum holding the lock is exit 1 even
// when a server does not answer, and a server that does not answer costs
// the status timeout at most: paused, or silent in the TLS handshake.
func TestStatusHeldDespiteAFailure(t *testing.T) {
	t.Parallel()
	c, _ := cluster(t, 5)
	for _, i := range []int{0, 1, 4} {
		set(c.Nodes[i], "job", "tok", 10*time.Second)
	}
	c.Nodes[2].Pause()
	defer c.Nodes[2].Resume()
	urls := c.URLs("")
	// A plain Redis waits for the end of a line that a TLS hello never sends.
	urls[3] = "rediss://" + c.Nodes[3].Addr()
	r := run(t, env(), "status", "--servers", strings.Join(urls, ","), "job")
	assert.Equal(t, exitHeld, r.code, r.stderr)
	assert.Less(t, r.took, statusTimeout+time.Second)
	lines := strings.Split(r.stdout, "\n")
	require.Len(t, lines, 6, r.stdout)
	assert.Contains(t, lines[2], c.Nodes[2].Addr()+" error: ")
	assert.Contains(t, lines[3], c.Nodes[3].Addr()+" error: ")
}

// TestStatusReadsTheURLsDatabase looks for the key in the database the URL
// names, by path or by ?db=, as run stores it there.
func TestStatusReadsTheURLsDatabase(t *testing.T) {
	t.Parallel()
	c := redistest.Start(t, 1)
	dir := t.TempDir()
	for _, u := range []string{c.Nodes[0].URL("") + "/3", c.Nodes[0].URL("") + "?db=3"} {
		environ := env("REDLOCK_SERVERS="+u, "D="+dir)
		p := start(t, environ, append([]string{"run", "job", "--"}, script(waiting)...)...)
		waitFile(t, filepath.Join(dir, "started"), p)
		r := run(t, environ, "status", "job")
		assert.Equal(t, exitHeld, r.code, "%s: %s %s", u, r.stdout, r.stderr)
		r = run(t, env("REDLOCK_SERVERS="+c.Nodes[0].URL("")), "status", "job")
		assert.Equal(t, exitOK, r.code, "database 0 is free: %s", r.stdout)
		touch(t, filepath.Join(dir, "go"))
		require.Equal(t, exitOK, p.wait(t).code)
		require.NoError(t, removeAll(dir))
	}
}

// TestStatusSaysWhatTheServersAnswered: servers that answer with an error
// are not said not to answer.
func TestStatusSaysWhatTheServersAnswered(t *testing.T) {
	t.Parallel()
	const right, wrong = "Right-pw-2222", "Wrong-pw-3333"
	c := redistest.Start(t, 3, redistest.WithPassword(right))
	r := run(t, env("REDLOCK_SERVERS="+strings.Join(c.URLs(wrong), ",")), "status", "job")
	assert.Equal(t, exitUnavailable, r.code, r.stderr)
	assert.NotContains(t, r.stderr, "did not answer")
	assert.Contains(t, r.stderr, "3 of 3 servers")
	assert.Regexp(t, regexp.MustCompile(`(?i)wrongpass|auth`), r.stdout)
	assert.NotContains(t, r.stdout+r.stderr, wrong)
}

// TestOneRedisNamedTwice: status and leader refuse a server list that
// names one Redis twice (127.0.0.1 and localhost), as run does: its answer
// would count twice toward a quorum. It is a usage error naming both.
func TestOneRedisNamedTwice(t *testing.T) {
	t.Parallel()
	c, _ := cluster(t, 2)
	twice := strings.Replace(c.Nodes[0].URL(""), "127.0.0.1", "localhost", 1)
	environ := env("REDLOCK_SERVERS=" + strings.Join([]string{c.Nodes[0].URL(""), c.Nodes[1].URL(""), twice}, ","))
	set(c.Nodes[0], "job", "a-token", time.Minute)
	for _, sub := range []string{"status", "leader"} {
		r := run(t, environ, sub, "job")
		assert.Equal(t, exitUsage, r.code, "%s: %s", sub, r.stderr)
		assert.Empty(t, r.stdout, sub)
		assert.Contains(t, r.stderr, c.Nodes[0].Addr(), sub)
		assert.Contains(t, r.stderr, strings.Replace(c.Nodes[0].Addr(), "127.0.0.1", "localhost", 1), sub)
		assert.Contains(t, r.stderr, "count twice", sub)
	}
}
