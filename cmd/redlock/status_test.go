package main

import (
	"context"
	"encoding/json"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goredlock/goredlock/internal/redistest"
	"github.com/goredlock/goredlock/keyserver"
	"github.com/goredlock/goredlock/keyserver/redis"
	"github.com/goredlock/goredlock/redlock"
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
// then the quorum's, and exits 1 only when a quorum holds it with one
// token.
func TestStatus(t *testing.T) {
	t.Parallel()
	c, environ, dir := jobCluster(t)
	a, b, d := regexp.QuoteMeta(c.Nodes[0].Addr()), regexp.QuoteMeta(c.Nodes[1].Addr()), regexp.QuoteMeta(c.Nodes[2].Addr())
	const held = `held \d+(\.\d+)?m?s by (#)?[0-9a-f]{8}`

	r := run(t, environ, "status", "job")
	assert.Equal(t, exitOK, r.code, r.stderr)
	assert.Empty(t, r.stderr)
	statusLines(t, r, a+" free", b+" free", d+" free", "quorum: free")

	// Held by a run: every server, a TTL under --ttl, and exit 1.
	p := start(t, environ, append([]string{"run", "--ttl", "20s", "job", "--"}, script(waiting)...)...)
	waitFile(t, filepath.Join(dir, "started"), p)
	awaitHeld(t, c, "job")
	r = run(t, environ, "status", "job")
	assert.Equal(t, exitHeld, r.code, r.stderr)
	tok := redistest.Text(get(c.Nodes[0], "job"))
	by := " by " + tok[17:25] // the holder's tag: the call's random digits
	statusLines(t, r, a+" held 1\\d\\.\\d+s"+by, b+" held 1\\d\\.\\d+s"+by, d+" held 1\\d\\.\\d+s"+by, "quorum: held 1\\d\\.\\d+s"+by)
	assert.NotContains(t, r.stdout, tok, "a token is never printed")
	// The order of the lines is the order of --servers.
	urls := c.URLs("")
	r = run(t, environ, "status", "--servers", urls[2]+","+urls[0]+","+urls[1], "job")
	assert.Equal(t, exitHeld, r.code, r.stderr)
	statusLines(t, r, d+" "+held, a+" "+held, b+" "+held, "quorum: "+held)
	touch(t, filepath.Join(dir, "go"))
	require.Equal(t, exitOK, p.wait(t).code)

	// Different tokens on two servers: no quorum, and the output tells
	// the holders apart. A key without a TTL says so.
	set(c.Nodes[0], "job", "token-a", 10*time.Second)
	set(c.Nodes[1], "job", "token-b", 0)
	r = run(t, environ, "status", "job")
	assert.Equal(t, exitOK, r.code, r.stderr)
	statusLines(t, r, a+" "+held, b+` held \(no expiry\) by #[0-9a-f]{8}`, d+" free", "quorum: free")
	assert.NotContains(t, r.stdout, "token-")
	lines := strings.Split(r.stdout, "\n")
	assert.NotEqual(t, lines[0][strings.LastIndex(lines[0], " "):], lines[1][strings.LastIndex(lines[1], " "):], "two holders, two tags")

	// One server down: the two that answer are free, so no quorum can
	// hold the lock... (Paused, not killed: a killed node's port may be
	// taken by a node of another test binary, which answers "free".)
	c.Nodes[0].MustDo("DEL", "job")
	c.Nodes[1].Pause()
	r = run(t, environ, "status", "job")
	assert.Equal(t, exitOK, r.code, r.stderr)
	statusLines(t, r, a+" free", b+" error: .*", d+" free", "quorum: free")

	// ...but one holding and one down could be a quorum: too few to tell.
	set(c.Nodes[2], "job", "y", 10*time.Second)
	r = run(t, environ, "status", "job")
	assert.Equal(t, exitUnavailable, r.code, r.stderr)
	assert.Equal(t, []string{`redlock: could not read "job" on 1 of 3 servers (see their errors): too few to tell whether a quorum (2) holds it`}, r.lines())
	statusLines(t, r, a+" free", b+" error: .*", d+" "+held, "quorum: too few servers answered to tell")

	// Two down: fewer than a quorum answered.
	c.Nodes[2].Pause()
	r = run(t, environ, "status", "job")
	assert.Equal(t, exitUnavailable, r.code, r.stderr)
	statusLines(t, r, a+" free", b+" error: .*", d+" error: .*", "quorum: too few servers answered to tell")
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
	// What a run costs on this machine now, every server answering: on
	// loaded cores starting the process and connecting took seconds.
	healthy := run(t, env(), "status", "--servers", strings.Join(c.URLs(""), ","), "job")
	assert.Equal(t, exitHeld, healthy.code, healthy.stderr)
	c.Nodes[2].Pause()
	defer c.Nodes[2].Resume()
	urls := c.URLs("")
	// A plain Redis waits for the end of a line that a TLS hello never sends.
	urls[3] = "rediss://" + c.Nodes[3].Addr()
	r := run(t, env(), "status", "--servers", strings.Join(urls, ","), "job")
	assert.Equal(t, exitHeld, r.code, r.stderr)
	assert.Less(t, r.took, healthy.took+statusTimeout+time.Second, "a healthy run took %v", healthy.took)
	lines := strings.Split(r.stdout, "\n")
	require.Len(t, lines, 7, r.stdout)
	assert.Regexp(t, `^quorum: held `, lines[5])
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

// TestStatusEveryKind: status shows, and exits 1 for, every kind of hold
// of the name: permits of a semaphore (what "free" on every server hid),
// readers and then a writer, a leader with its value and term; --json
// says the same, parsed back here as the manual documents it.
func TestStatusEveryKind(t *testing.T) {
	t.Parallel()
	c, environ := cluster(t, 3)
	client := libraryClient(t, c.URLs(""))
	ctx := context.Background()
	status := func() (result, jsonStatus) {
		t.Helper()
		r := run(t, environ, "status", "--json", "job")
		var js jsonStatus
		require.NoError(t, json.Unmarshal([]byte(r.stdout), &js), r.stdout)
		require.Len(t, js.Servers, 3)
		for i, s := range js.Servers {
			assert.Equal(t, c.Nodes[i].Addr(), s.Server)
			assert.Empty(t, s.Error)
			require.NotNil(t, s.NameView, "server %d", i)
		}
		return r, js
	}

	// Two permits of three, taken as run --permits 3 takes them.
	sem := client.Semaphore("job", 3)
	var permits []*redlock.Lock
	for range 2 {
		l, err := sem.TryAcquire(ctx, 20*time.Second)
		require.NoError(t, err)
		permits = append(permits, l)
	}
	// A grant returns at a quorum: the third server's call may still be on
	// its way, and this step reads every server.
	require.Eventually(t, func() bool {
		st, err := client.Inspect(ctx, "job")
		if err != nil {
			return false
		}
		for _, s := range st.Servers {
			if s.Semaphore.InUse != 2 {
				return false
			}
		}
		return true
	}, 5*time.Second, 10*time.Millisecond, "every server holds both permits")
	r := run(t, environ, "status", "job")
	assert.Equal(t, exitHeld, r.code, r.stderr)
	statusLines(t, r, ".* free; semaphore 2 of 3 permits", ".* free; semaphore 2 of 3 permits", ".* free; semaphore 2 of 3 permits", "quorum: free; semaphore 2 of 3 permits")
	r, js := status()
	assert.Equal(t, exitHeld, r.code, r.stderr)
	assert.True(t, js.Held)
	assert.True(t, js.Decided)
	assert.Equal(t, "job", js.Name)
	assert.Equal(t, 2, js.Quorum)
	assert.False(t, js.Lock.Held)
	assert.Equal(t, jsonSemaphore{Permits: 3, InUse: 2}, js.Semaphore)
	assert.Equal(t, jsonSemaphore{Permits: 3, InUse: 2}, js.Servers[1].Semaphore)
	for _, l := range permits {
		assert.NotContains(t, r.stdout, l.Token())
		require.NoError(t, l.Release(ctx))
	}

	// Two readers, then a writer.
	rw := client.RWMutex("job")
	r1, err := rw.RLock(ctx, 20*time.Second)
	require.NoError(t, err)
	r2, err := rw.RLock(ctx, 20*time.Second)
	require.NoError(t, err)
	r = run(t, environ, "status", "job")
	assert.Equal(t, exitHeld, r.code, r.stderr)
	assert.Contains(t, r.stdout, "quorum: free; read-write 2 readers\n")
	_, js = status()
	assert.Equal(t, jsonRW{Readers: 2}, js.RW)
	require.NoError(t, r1.Release(ctx))
	require.NoError(t, r2.Release(ctx))
	w, err := rw.Lock(ctx, 20*time.Second)
	require.NoError(t, err)
	r = run(t, environ, "status", "job")
	assert.Equal(t, exitHeld, r.code, r.stderr)
	assert.Contains(t, r.stdout, "quorum: free; read-write writer "+w.Token()[17:25]+"\n")
	_, js = status()
	assert.Equal(t, jsonRW{Writer: w.Token()[17:25]}, js.RW)
	require.NoError(t, w.Release(ctx))

	// A leader: its value and term.
	lctx, resign := context.WithCancel(ctx)
	defer resign()
	lead, err := client.Election("job").Campaign(lctx, 20*time.Second, "host-a")
	require.NoError(t, err)
	r = run(t, environ, "status", "job")
	assert.Equal(t, exitHeld, r.code, r.stderr)
	assert.Regexp(t, `(?m)^quorum: free; election leader "host-a" 1\d\.\d+s term `+strconv.FormatUint(lead.Fence(), 10)+`$`, r.stdout)
	r, js = status()
	assert.Equal(t, exitHeld, r.code, r.stderr)
	assert.Equal(t, "host-a", js.Election.Leader)
	assert.Equal(t, lead.Fence(), js.Election.Term)
	assert.Greater(t, js.Election.TTLMs, int64(10000))
	require.NoError(t, lead.Release(ctx))

	// All released: exit 0, the term stays.
	r, js = status()
	assert.Equal(t, exitOK, r.code, r.stderr)
	assert.False(t, js.Held)
	assert.Equal(t, lead.Fence(), js.Election.Term)
	assert.Empty(t, js.Election.Leader)
}

// TestStatusJSONWithAServerDown: --json reports a server's error in its
// entry, and says whether the answers decide: held by a quorum despite a
// server down, or too few answered to tell (exit 69, stdout still JSON).
func TestStatusJSONWithAServerDown(t *testing.T) {
	t.Parallel()
	c, environ := cluster(t, 3)
	set(c.Nodes[0], "job", "tok", 10*time.Second)
	set(c.Nodes[2], "job", "tok", 10*time.Second)
	c.Nodes[1].Kill()
	r := run(t, environ, "status", "--json", "job")
	assert.Equal(t, exitHeld, r.code, r.stderr)
	var js jsonStatus
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &js), r.stdout)
	assert.True(t, js.Held)
	assert.True(t, js.Decided)
	assert.True(t, js.Lock.Held)
	assert.Regexp(t, `^#[0-9a-f]{8}$`, js.Lock.Holder)
	assert.Contains(t, js.Servers[1].Error, "connection refused")
	assert.Nil(t, js.Servers[1].NameView)
	assert.NotContains(t, r.stdout, `"tok"`)

	c.Nodes[0].MustDo("DEL", "job")
	r = run(t, environ, "status", "--json", "job")
	assert.Equal(t, exitUnavailable, r.code, r.stderr)
	js = jsonStatus{}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &js), r.stdout)
	assert.False(t, js.Held)
	assert.False(t, js.Decided)
	assert.True(t, js.Servers[2].Lock.Held)
}

// TestDescribeCountsInWords: status writes a count of one in the singular
// ("1 reader", "1 of 1 permit"), any other in the plural.
func TestDescribeCountsInWords(t *testing.T) {
	for _, c := range []struct {
		v    redlock.View
		want string
	}{
		{redlock.View{RW: redlock.RWView{Readers: 1}}, "free; read-write 1 reader"},
		{redlock.View{RW: redlock.RWView{Readers: 2}}, "free; read-write 2 readers"},
		{redlock.View{RW: redlock.RWView{Readers: 1, Waiters: 1}}, "free; read-write 1 reader, 1 waiting"},
		{redlock.View{Semaphore: redlock.SemaphoreView{Permits: 1, InUse: 1}}, "free; semaphore 1 of 1 permit"},
		{redlock.View{Semaphore: redlock.SemaphoreView{Permits: 3, InUse: 1}}, "free; semaphore 1 of 3 permits"},
	} {
		assert.Equal(t, c.want, describe(c.v))
	}
}

// TestDescribeTruncated: a verdict that counts only what the servers list
// says "at least", in words and in JSON.
func TestDescribeTruncated(t *testing.T) {
	v := redlock.View{Semaphore: redlock.SemaphoreView{Permits: 10_000, InUse: 1024, Truncated: true},
		RW: redlock.RWView{Readers: 1024, Truncated: true}}
	assert.Equal(t, "free; semaphore at least 1024 of 10000 permits; read-write at least 1024 readers", describe(v))
	js := toJSON(v)
	assert.Equal(t, jsonSemaphore{Permits: 10_000, InUse: 1024, Truncated: true}, js.Semaphore)
	assert.True(t, js.RW.Truncated)
	b, err := json.Marshal(js.Semaphore)
	require.NoError(t, err)
	assert.JSONEq(t, `{"permits": 10000, "in_use": 1024, "waiters": 0, "truncated": true}`, string(b))
}

// TestStatusLockDelay: a lock taken with a lock-delay D keeps its key for
// its TTL and then D; status --lock-delay D reads the last D of the key's
// TTL as the delay in force and the rest as the lock held, and without
// the flag the whole TTL as held. A delay past redlock.MaxLockDelay, or
// negative, is a usage error.
func TestStatusLockDelay(t *testing.T) {
	t.Parallel()
	c, environ := cluster(t, 3)
	a, b, d := regexp.QuoteMeta(c.Nodes[0].Addr()), regexp.QuoteMeta(c.Nodes[1].Addr()), regexp.QuoteMeta(c.Nodes[2].Addr())
	var ks []keyserver.KeyServer
	for _, u := range c.URLs("") {
		s, err := redis.FromURL(u)
		require.NoError(t, err)
		t.Cleanup(func() { s.Close() })
		ks = append(ks, s)
	}
	client, err := redlock.New(ks, redlock.WithLockDelay(40*time.Second))
	require.NoError(t, err)
	t.Cleanup(func() { client.Close() })
	l, err := client.Acquire(context.Background(), "job", 20*time.Second)
	require.NoError(t, err)
	by := " by " + l.Token()[17:25]
	for _, n := range c.Nodes { // the grant came from a quorum; the third may still be on its way
		require.Eventually(t, func() bool { return get(n, "job") != nil }, 5*time.Second, time.Millisecond)
	}

	const lease = `held 1\d\.\d+s`
	r := run(t, environ, "status", "--lock-delay", "40s", "job")
	assert.Equal(t, exitHeld, r.code, r.stderr)
	statusLines(t, r, a+" "+lease+by, b+" "+lease+by, d+" "+lease+by, "quorum: "+lease+by)
	r = run(t, environ, "status", "job")
	assert.Equal(t, exitHeld, r.code, r.stderr)
	const whole = `held [56]\d\.\d+s` // the lease and the delay
	statusLines(t, r, a+" "+whole+by, b+" "+whole+by, d+" "+whole+by, "quorum: "+whole+by)

	// The lease ran out on two servers (their keys set as its end leaves
	// them): in the delay there, which keeps a quorum from granting.
	for _, n := range c.Nodes[:2] {
		n.MustDo("PEXPIRE", "job", 30000)
	}
	r = run(t, environ, "status", "--lock-delay", "40s", "job")
	assert.Equal(t, exitOK, r.code, r.stderr)
	const inDelay = `free, lock-delay [23]\d(\.\d+)?s`
	statusLines(t, r, a+" "+inDelay, b+" "+inDelay, d+" "+lease+by, "quorum: "+inDelay)
	r = run(t, environ, "status", "--json", "--lock-delay", "40s", "job")
	assert.Equal(t, exitOK, r.code, r.stderr)
	var js jsonStatus
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &js), r.stdout)
	assert.False(t, js.Lock.Held)
	assert.True(t, js.Lock.DelayMs > 20000 && js.Lock.DelayMs <= 30000, "delay_ms %d", js.Lock.DelayMs)

	for _, bad := range []string{"-1s", "2m"} {
		r := run(t, environ, "status", "--lock-delay", bad, "job")
		assert.Equal(t, exitUsage, r.code, "%s: %s", bad, r.stderr)
		assert.Len(t, r.lines(), 1, r.stderr)
		assert.Contains(t, r.stderr, "--lock-delay", bad)
	}
	require.NoError(t, l.Release(context.Background()))
}
