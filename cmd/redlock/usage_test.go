package main

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestBadUsageExits64WithOneLine runs redlock with command lines that are
// wrong in every way it checks: each exits 64 with one line on stderr,
// nothing on stdout, and no server contacted.
func TestBadUsageExits64WithOneLine(t *testing.T) {
	t.Parallel()
	ln := listen(t)
	u := ln.url()
	const secret = "s3cr3t-pw"
	for _, tc := range []struct {
		name  string
		env   []string
		args  []string
		want  string // in the message
		usage bool   // the message ends with the subcommand's synopsis
	}{
		{"no subcommand", nil, nil, "no subcommand", true},
		{"unknown subcommand", nil, []string{"lock", "job"}, `unknown subcommand "lock"`, true},
		{"run alone", nil, []string{"run"}, `missing "--"`, true},
		{"no dashes", nil, []string{"run", "--servers", u, "job", "true"}, `missing "--"`, true},
		{"no name", nil, []string{"run", "--servers", u, "--", "true"}, "missing NAME", true},
		{"empty name", nil, []string{"run", "--servers", u, "", "--", "true"}, "empty NAME", true},
		{"no command", nil, []string{"run", "--servers", u, "job", "--"}, "missing COMMAND", true},
		{"empty command", nil, []string{"run", "--servers", u, "job", "--", ""}, "empty COMMAND", true},
		{"flag after name", nil, []string{"run", "--servers", u, "job", "--ttl", "5s", "--", "true"}, `unexpected "--ttl" after NAME`, true},
		{"unknown flag", nil, []string{"run", "--servers", u, "--retries", "3", "job", "--", "true"}, "-retries", true},
		{"ttl without unit", nil, []string{"run", "--servers", u, "--ttl", "30", "job", "--", "true"}, "not a duration", true},
		{"ttl too short", nil, []string{"run", "--servers", u, "--ttl", "50ms", "job", "--", "true"}, "under the minimum of 100ms", false},
		{"negative wait", nil, []string{"run", "--servers", u, "--wait", "-1s", "job", "--", "true"}, "--wait -1s is negative", false},
		{"negative grace", nil, []string{"run", "--servers", u, "--grace", "-1s", "job", "--", "true"}, "--grace -1s is negative", false},
		{"no servers", nil, []string{"run", "job", "--", "true"}, "no servers", true},
		{"only commas", []string{"REDLOCK_SERVERS= , ,"}, []string{"run", "job", "--", "true"}, "no servers", true},
		{"not a redis URL", nil, []string{"run", "--servers", u + ",http://127.0.0.1:1", "job", "--", "true"}, "server 2 of 2", false},
		{"unknown parameter", nil, []string{"run", "--servers", u + "?dbx=2", "job", "--", "true"}, `unknown parameter "dbx"`, false},
		{"database too high", []string{"REDLOCK_SERVERS=" + u + "/99"}, []string{"run", "job", "--", "true"}, "database", false},
		{"bad escape in password", nil, []string{"run", "--servers", "redis://:" + secret + "%zz@127.0.0.1:1", "job", "--", "true"}, "invalid %-escape", false},
		{"password with slash", nil, []string{"run", "--servers", "redis://:" + secret + "/x@127.0.0.1:1", "job", "--", "true"}, "percent-encode", false},
		{"same server twice", nil, []string{"run", "--servers", u + "," + u, "job", "--", "true"}, "listed twice", false},
		{"status alone", nil, []string{"status"}, "missing NAME", true},
		{"status no name", nil, []string{"status", "--servers", u}, "missing NAME", true},
		{"status two names", nil, []string{"status", "--servers", u, "a", "b"}, `unexpected "b"`, true},
		{"status no servers", nil, []string{"status", "job"}, "no servers", true},
		{"status bad port", nil, []string{"status", "--servers", "redis://127.0.0.1:99999", "job"}, "port", false},
		{"status unknown flag", nil, []string{"status", "--wait", "1s", "--servers", u, "job"}, "-wait", true},
		{"doctor no servers", nil, []string{"doctor"}, "no servers", true},
		{"doctor with a name", nil, []string{"doctor", "--servers", u, "job"}, `unexpected "job"`, true},
		{"doctor unknown flag", nil, []string{"doctor", "--ttl", "1s", "--servers", u}, "-ttl", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := run(t, env(tc.env...), tc.args...)
			assert.Equal(t, exitUsage, r.code)
			assert.Empty(t, r.stdout)
			require.Len(t, r.lines(), 1, "stderr: %q", r.stderr)
			line := r.lines()[0]
			assert.True(t, strings.HasPrefix(line, "redlock: "), line)
			assert.Contains(t, line, tc.want)
			assert.NotContains(t, line, secret)
			if tc.usage {
				assert.Contains(t, line, "(usage: redlock ")
			}
		})
	}
	assert.Zero(t, ln.conns.Load(), "a server was contacted")
}

// TestHelp prints the help of each subcommand on stdout and exits 0.
func TestHelp(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"-h"}, {"help"}, {"run", "-h"}, {"run", "--help"}, {"status", "-h"}, {"doctor", "-h"}, {"help", "doctor"}} {
		r := run(t, env(), args...)
		assert.Equal(t, exitOK, r.code, args)
		assert.Empty(t, r.stderr, args)
		assert.Contains(t, r.stdout, "usage:", args)
	}
	r := run(t, env(), "run", "-h")
	for _, flag := range []string{"--servers", "--ttl", "--wait", "--skip", "--fence", "--grace", "REDLOCK_NAME", "REDLOCK_TOKEN"} {
		assert.Contains(t, r.stdout, flag)
	}
}

// TestCommandNotFoundOrNotExecutable exits 127 and 126 as a shell does,
// before any server is contacted: a host that cannot run COMMAND must not
// take the lock from the hosts that can.
func TestCommandNotFoundOrNotExecutable(t *testing.T) {
	t.Parallel()
	ln := listen(t)
	dir := t.TempDir()
	plain := dir + "/plain"
	touch(t, plain) // mode 0600: not executable
	for _, tc := range []struct {
		command string
		code    int
	}{
		{"no-such-command-redlock-test", exitNotFound},
		{dir + "/missing", exitNotFound},
		{plain, exitCannotExec},
		{dir, exitCannotExec},
	} {
		r := run(t, env("REDLOCK_SERVERS="+ln.url()), "run", "job", "--", tc.command)
		assert.Equal(t, tc.code, r.code, tc.command)
		assert.Len(t, r.lines(), 1, r.stderr)
	}
	assert.Zero(t, ln.conns.Load(), "a server was contacted")
}

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
