package main

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goredlock/goredlock/redlock"
)

// TestAlsoHoldsEveryName: with --also, every name's key holds the run's
// token on every server while COMMAND runs, COMMAND gets the names, and
// no key is left once it ends.
func TestAlsoHoldsEveryName(t *testing.T) {
	t.Parallel()
	c, environ, dir := jobCluster(t)
	p := start(t, environ, append([]string{"run", "--ttl", "10s", "--also", "ledger", "--also", "audit", "--also", "ledger", "accounts", "--"},
		script(`echo "$REDLOCK_NAME $REDLOCK_TOKEN"; `+waiting)...)...)
	waitFile(t, filepath.Join(dir, "started"), p)
	values := map[string]map[any]bool{}
	for _, key := range []string{"accounts", "ledger", "audit"} {
		values[key] = awaitHeld(t, c, key)
	}
	touch(t, filepath.Join(dir, "go"))
	r := p.wait(t)
	require.Equal(t, exitOK, r.code, r.stderr)
	assert.Empty(t, r.stderr)

	m := regexp.MustCompile(`^accounts,ledger,audit ([0-9a-f]{16}\.[0-9a-f]{32})\n$`).FindStringSubmatch(r.stdout)
	require.NotNil(t, m, "stdout: %q", r.stdout)
	for key, v := range values {
		assert.Equal(t, map[any]bool{m[1]: true}, v, "key %q holds the token on every server", key)
		requireNoKey(t, c, key)
	}
}

// TestAlsoIsAllOrNothing: when another holds one of the names, the run is
// turned away (75, or 0 with --skip) without taking the others, and
// COMMAND does not run.
func TestAlsoIsAllOrNothing(t *testing.T) {
	t.Parallel()
	c, environ, dir := jobCluster(t)
	client := libraryClient(t, c.URLs(""))
	held, err := client.TryAcquire(bg, "ledger", 10*time.Second)
	require.NoError(t, err)

	cmd := script(`touch "$D/ran"`)
	r := run(t, environ, append([]string{"run", "--also", "ledger", "accounts", "--"}, cmd...)...)
	assert.Equal(t, exitTempFail, r.code, r.stderr)
	assert.Equal(t, []string{`redlock: one of the locks "accounts", "ledger" is held elsewhere`}, r.lines())
	requireNoKey(t, c, "accounts")

	r = run(t, environ, append([]string{"run", "--skip", "--also", "ledger", "accounts", "--"}, cmd...)...)
	assert.Equal(t, exitOK, r.code, r.stderr)
	assert.Equal(t, []string{`redlock: one of the locks "accounts", "ledger" is held elsewhere; COMMAND skipped`}, r.lines())
	requireNoKey(t, c, "accounts")
	assert.NoFileExists(t, filepath.Join(dir, "ran"))

	// The library's set and the tool's exclude each other too.
	_, err = client.TryAcquireAll(bg, []string{"audit", "ledger"}, 10*time.Second)
	require.ErrorIs(t, err, redlock.ErrHeldElsewhere)
	require.NoError(t, held.Release(bg))
	r = run(t, environ, append([]string{"run", "--also", "ledger", "accounts", "--"}, cmd...)...)
	assert.Equal(t, exitOK, r.code, r.stderr)
	assert.FileExists(t, filepath.Join(dir, "ran"))
}

// TestAlsoOverlappingSetsTakeTurns: runs over overlapping sets named in
// different orders, each willing to wait, all run, never two at once, and
// none deadlocks.
func TestAlsoOverlappingSetsTakeTurns(t *testing.T) {
	t.Parallel()
	_, environ, dir := jobCluster(t)
	job := script(`mkdir "$D/in" || echo overlap >> "$D/log"; sleep 0.15; rmdir "$D/in"; echo ran >> "$D/log"`)
	var ps []*proc
	for _, names := range [][]string{{"--also", "b", "a"}, {"--also", "a", "b"}, {"--also", "c", "--also", "a", "b"}, {"--also", "b", "c"}} {
		args := append(append([]string{"run", "--ttl", "10s", "--wait", "15s"}, names...), "--")
		ps = append(ps, start(t, environ, append(args, job...)...))
	}
	for _, p := range ps {
		r := p.wait(t)
		assert.Equal(t, exitOK, r.code, r.stderr)
	}
	assert.Equal(t, strings.Repeat("ran\n", 4), readFile(t, filepath.Join(dir, "log")))
}

// TestAlsoFence: with --fence and --also, $REDLOCK_FENCE holds each name's
// fencing token in the names' order, each larger than the last run's.
func TestAlsoFence(t *testing.T) {
	t.Parallel()
	_, environ := cluster(t, 3)
	var last [2]uint64
	for range 3 {
		r := run(t, environ, append([]string{"run", "--fence", "--also", "b", "a", "--"}, script(`echo "$REDLOCK_FENCE"`)...)...)
		require.Equal(t, exitOK, r.code, r.stderr)
		var fences [2]uint64
		_, err := fmt.Sscanf(r.stdout, "%d,%d\n", &fences[0], &fences[1])
		require.NoError(t, err, r.stdout)
		for i := range fences {
			assert.Greater(t, fences[i], last[i], "fence %d of %q", i, r.stdout)
		}
		last = fences
	}
	// One name alone keeps its own counter going.
	r := run(t, environ, append([]string{"run", "--fence", "b", "--"}, script(`echo "$REDLOCK_FENCE"`)...)...)
	require.Equal(t, exitOK, r.code, r.stderr)
	var fence uint64
	_, err := fmt.Sscan(r.stdout, &fence)
	require.NoError(t, err, r.stdout)
	assert.Greater(t, fence, last[1])
}

// TestAlsoUsage: --also takes a name, does not go with --permits, and the
// help names it.
func TestAlsoUsage(t *testing.T) {
	t.Parallel()
	environ := env("REDLOCK_SERVERS=" + listen(t).url())
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "--also", "", "x", "--", "true"}, "empty name"},
		{[]string{"run", "--also", "y", "--permits", "2", "x", "--", "true"}, "--also and --permits do not go together"},
		{[]string{"run", "--also"}, "--also"},
	} {
		r := run(t, environ, tc.args...)
		assert.Equal(t, exitUsage, r.code, "%q: %s", tc.args, r.stderr)
		assert.Contains(t, r.stderr, tc.want, "%q", tc.args)
	}
	args := []string{"run"}
	for i := range redlock.MaxNames {
		args = append(args, "--also", fmt.Sprint("n", i))
	}
	r := run(t, environ, append(args, "x", "--", "true")...)
	assert.Equal(t, exitUsage, r.code, r.stderr)
	assert.Contains(t, r.stderr, fmt.Sprintf("%d names: at most %d", redlock.MaxNames+1, redlock.MaxNames))

	r = run(t, environ, "help", "run")
	assert.Equal(t, exitOK, r.code)
	assert.Contains(t, r.stdout, "--also NAME2")
}
