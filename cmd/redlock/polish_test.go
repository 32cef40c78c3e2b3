package main

import (
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	redigo "github.com/gomodule/redigo/redis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goredlock/goredlock/internal/redistest"
)

// TestVersion: redlock --version and redlock version print the module
// version on stdout and exit 0; a build from a checkout says "(devel)" or
// the version the go command derived from version control.
func TestVersion(t *testing.T) {
	t.Parallel()
	for _, arg := range []string{"--version", "version", "-version"} {
		r := run(t, env(), arg)
		assert.Equal(t, exitOK, r.code, arg)
		assert.Empty(t, r.stderr, arg)
		assert.Regexp(t, `^redlock (\(devel\)|v[0-9]+\.[0-9]+\.[0-9]+\S*)\n$`, r.stdout, arg)
	}
	r := run(t, env(), "version", "extra")
	assert.Equal(t, exitUsage, r.code)
	assert.Len(t, r.lines(), 1, r.stderr)
}

// TestHelpPrintsManual: redlock help and redlock -h print the manual, the
// one go doc shows, from the binary itself.
func TestHelpPrintsManual(t *testing.T) {
	t.Parallel()
	want, err := os.ReadFile("manual.txt")
	require.NoError(t, err)
	for _, args := range [][]string{{"help"}, {"-h"}, {"--help"}} {
		r := run(t, env(), args...)
		assert.Equal(t, exitOK, r.code, args)
		assert.Empty(t, r.stderr, args)
		assert.Equal(t, string(want), r.stdout, args)
	}
	r := run(t, env(), "help")
	for _, s := range []string{"redlock run [flags] NAME", "# Exit status", "--wait D", "redlock --version", "REDLOCK_TOKEN"} {
		assert.Contains(t, r.stdout, s)
	}
	for sub, flag := range map[string]string{"run": "--grace D", "status": "--servers URL"} {
		r := run(t, env(), "help", sub)
		assert.Equal(t, exitOK, r.code, sub)
		assert.Contains(t, r.stdout, "usage: redlock "+sub)
		assert.Contains(t, r.stdout, flag)
	}
	r = run(t, env(), "help", "lock")
	assert.Equal(t, exitUsage, r.code)
	assert.Len(t, r.lines(), 1, r.stderr)
}

// TestManualMatchesDoc: manual.txt, which redlock help prints, is the
// package doc of doc.go, which go doc prints.
func TestManualMatchesDoc(t *testing.T) {
	src, err := os.ReadFile("doc.go")
	require.NoError(t, err)
	var doc []string
	for _, line := range strings.Split(string(src), "\n") {
		if line == "package main" {
			break
		}
		require.True(t, strings.HasPrefix(line, "//"), "doc.go: %q before package main", line)
		line = strings.TrimPrefix(line, "//")
		doc = append(doc, strings.TrimPrefix(line, " "))
	}
	manual, err := os.ReadFile("manual.txt")
	require.NoError(t, err)
	assert.Equal(t, strings.Join(doc, "\n")+"\n", string(manual), "manual.txt differs from doc.go's package doc")
}

// TestUsageMessagesNameFlagsAsTheHelpDoes: no double space, and flags
// spelled --ttl as in the help, not -ttl as the flag package does.
func TestUsageMessagesNameFlagsAsTheHelpDoes(t *testing.T) {
	t.Parallel()
	u := listen(t).url()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "; redlock -h for more)"},
		{[]string{"lock"}, "; redlock -h for more)"},
		{[]string{"run", "--servers", u, "--retries", "3", "job", "--", "true"}, "flag provided but not defined: --retries"},
		{[]string{"run", "--servers", u, "-retries", "3", "job", "--", "true"}, "flag provided but not defined: --retries"},
		{[]string{"run", "--servers", u, "--ttl", "30", "job", "--", "true"}, `invalid value "30" for flag --ttl: not a duration`},
		{[]string{"run", "--servers", u, "--skip=maybe", "job", "--", "true"}, `for --skip`},
		{[]string{"status", "--servers"}, "flag needs an argument: --servers"},
	} {
		r := run(t, env(), tc.args...)
		assert.Equal(t, exitUsage, r.code, tc.args)
		require.Len(t, r.lines(), 1, r.stderr)
		line := r.lines()[0]
		assert.Contains(t, line, tc.want)
		assert.NotContains(t, line, "  ", "double space")
		assert.NotRegexp(t, `(^|[ :])-[a-gi-z]`, line, "a flag with one dash (but -h)")
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
	var failed []string
	for _, l := range r.lines() {
		if strings.Contains(l, "failed the first attempt") {
			failed = append(failed, l)
		}
	}
	require.Len(t, failed, 1, r.stderr)
	assert.Contains(t, failed[0], "redlock: server "+down.Nodes[0].Addr()+" failed the first attempt: ")
	assert.Contains(t, failed[0], "connection refused")
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
				conn, err := redigo.Dial("tcp", n.Addr(), redigo.DialPassword(right), redigo.DialReadTimeout(time.Second))
				require.NoError(t, err)
				_, err = conn.Do("HSET", tc.key, "f", "v")
				conn.Close()
				require.NoError(t, err)
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
