package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goredlock/goredlock/keyserver"
	"github.com/goredlock/goredlock/keyserver/redis"
	"github.com/goredlock/goredlock/redlock"
)

// TestPermitsLetNRunAtOnce: six runs of a job with --permits 2, each
// willing to wait: every one runs, never more than two at once, and two
// do run at once.
func TestPermitsLetNRunAtOnce(t *testing.T) {
	t.Parallel()
	_, environ := cluster(t, 3)
	dir := t.TempDir()
	environ = append(environ, "D="+dir)
	// Each run adds a file while it runs and counts the files it sees.
	job := script(`f=$(mktemp -p "$D" in.XXXXXX); sleep 0.3; ls "$D" | grep -c '^in\.' >> "$D/seen"; rm "$f"`)
	var ps []*proc
	// A TTL of 10 s, for a server timeout of 500 ms: each run releases its
	// permit when its job ends, and a shorter TTL's timeout (100 ms for
	// 2 s) was missed under CI's load, which lost a permit mid-job.
	for range 6 {
		ps = append(ps, start(t, environ, append([]string{"run", "--permits", "2", "--ttl", "10s", "--wait", "18s", "batch", "--"}, job...)...))
	}
	for _, p := range ps {
		r := p.wait(t)
		assert.Equal(t, exitOK, r.code, r.stderr)
	}
	seen := strings.Fields(readFile(t, filepath.Join(dir, "seen")))
	require.Len(t, seen, 6, "every run ran")
	most := "0"
	for _, n := range seen {
		assert.Contains(t, []string{"1", "2"}, n, "runs at once: %v", seen)
		most = max(most, n)
	}
	assert.Equal(t, "2", most, "two permits, and never two runs at once: %v", seen)
}

// TestPermitsTurnAwayWhenAllAreHeld: with both permits held, a third run
// without --wait exits 75 naming the semaphore, and with --skip exits 0;
// the lock of the same name is another thing, and is free.
func TestPermitsTurnAwayWhenAllAreHeld(t *testing.T) {
	t.Parallel()
	c, environ := cluster(t, 3)
	client := libraryClient(t, c.URLs(""))
	sem := client.Semaphore("backup", 2)
	for range 2 {
		l, err := sem.TryAcquire(context.Background(), 10*time.Second)
		require.NoError(t, err)
		defer l.Release(context.Background())
	}
	r := run(t, environ, "run", "--permits", "2", "backup", "--", "true")
	assert.Equal(t, exitTempFail, r.code, r.stderr)
	assert.Contains(t, r.stderr, `every one of the 2 permits of semaphore "backup" is held elsewhere`)
	r = run(t, environ, "run", "--permits", "2", "--skip", "backup", "--", "false")
	assert.Equal(t, exitOK, r.code, r.stderr)
	r = run(t, environ, "run", "backup", "--", "true")
	assert.Equal(t, exitOK, r.code, "the lock %q is not the semaphore: %s", "backup", r.stderr)
}

// TestLeaderPrintsTheLeadersValue: redlock leader prints what the leader
// campaigned with, and exits 1 when nobody leads.
func TestLeaderPrintsTheLeadersValue(t *testing.T) {
	t.Parallel()
	c, environ := cluster(t, 3)
	r := run(t, environ, "leader", "scheduler")
	assert.Equal(t, exitNoLeader, r.code, r.stderr)
	assert.Contains(t, r.stderr, `no leader of "scheduler"`)
	assert.Empty(t, r.stdout)

	client := libraryClient(t, c.URLs(""))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	l, err := client.Election("scheduler").Campaign(ctx, 10*time.Second, "10.0.0.7:8080")
	require.NoError(t, err)
	r = run(t, environ, "leader", "scheduler")
	assert.Equal(t, exitOK, r.code, r.stderr)
	assert.Equal(t, "10.0.0.7:8080\n", r.stdout)
	require.NoError(t, l.Release(context.Background()))

	r = run(t, environ, "leader", "scheduler")
	assert.Equal(t, exitNoLeader, r.code, "after the leader resigned: %s", r.stderr)
}

// TestPrimitiveUsage: --permits takes a count of 0 or more, and leader
// takes one NAME.
func TestPrimitiveUsage(t *testing.T) {
	t.Parallel()
	environ := env("REDLOCK_SERVERS=" + listen(t).url())
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "--permits", "-1", "x", "--", "true"}, "--permits -1 is negative"},
		{[]string{"run", "--permits", "two", "x", "--", "true"}, "--permits"},
		{[]string{"leader"}, "missing NAME"},
		{[]string{"leader", "a", "b"}, `unexpected "b" after NAME`},
	} {
		r := run(t, environ, tc.args...)
		assert.Equal(t, exitUsage, r.code, "%q: %s", tc.args, r.stderr)
		assert.Contains(t, r.stderr, tc.want, "%q", tc.args)
	}
	r := run(t, environ, "help", "leader")
	assert.Equal(t, exitOK, r.code)
	assert.Contains(t, r.stdout, "usage: redlock leader")
}

// libraryClient is a program of package redlock on the same servers, with
// the tool's key names (no prefix); closed at the test's end.
func libraryClient(t *testing.T, urls []string) *redlock.Client {
	t.Helper()
	var ks []keyserver.KeyServer
	for _, u := range urls {
		s, err := redis.FromURL(u)
		require.NoError(t, err)
		t.Cleanup(func() { s.Close() })
		ks = append(ks, s)
	}
	c, err := redlock.New(ks)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return c
}
