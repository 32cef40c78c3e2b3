package main

import (
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
	for _, args := range [][]string{{"-h"}, {"help"}, {"run", "-h"}, {"run", "--help"}, {"status", "-h"}} {
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
