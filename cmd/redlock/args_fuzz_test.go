package main

import (
	"errors"
	"net/url"
	"strings"
	"testing"
)

// FuzzArgs feeds the command line of run, status and leader, and
// $REDLOCK_SERVERS, arbitrary text (args are the lines of the first
// input): parsing them and opening their servers (offline: no server is
// dialed) must not panic, a failure must be a usage error, and its line
// as the tool prints it must not repeat the password of a URL given. (Its
// own search for passwords is simpler than the tool's: any password it
// sees, the tool must hide.)
func FuzzArgs(f *testing.F) {
	for _, seed := range [][2]string{
		{"run\njob\n--\ntrue", "redis://127.0.0.1:6379"},
		{"run\n--servers\nredis://:Secret-pw-1@h1,redis://h2\n--ttl\n2s\njob\n--\nsleep\n1", ""},
		{"run\n--ttl\nredis://:Secret-pw-2@h1\njob\n--\ntrue", ""},
		{"run\njob\nredis://u:Secret-pw-3@h1\n--\ntrue", ""},
		{"run\n--wait=-1s\n--skip\n--fence\n--grace\n1h\njob\n--\ntrue", "redis://h1, ,redis://h2"},
		{"status\njob", "rediss://:Secret-pw-4@h1:6380/2?dial_timeout=x"},
		{"status\n--servers=redis://h\njob\nextra", ""},
		{"status\n-h", ""},
		{"leader\n--servers\nredis://:Secret-pw-5@h1\nelection", ""},
		{"run\n--permits\n3\njob\n--\ntrue", "redis://h1"},
		{"help\nrun", ""},
		{"run\njob\n--\ntrue", "redis://h1,redis://h1"},
		{"run\njob\n--\ntrue", "redis://:Secret-pw-5@h1:99999"},
		{"run\n--bogus=redis://:Secret-pw-6@h\njob\n--\ntrue", ""},
		{"", ""},
	} {
		f.Add(seed[0], seed[1])
	}
	f.Fuzz(func(t *testing.T, lines, env string) {
		msg := parseMessage(lines, env)
		if strings.HasPrefix(msg, "not a usage error") {
			t.Fatal(msg)
		}
		for _, pw := range passwords(lines, env) {
			// The same input with the password replaced tells a message
			// that quotes the password from one whose own words hold it.
			other := strings.Repeat("Z", len(pw))
			if strings.Contains(pw, "Z") {
				other = strings.Repeat("Y", len(pw))
			}
			without := parseMessage(strings.ReplaceAll(lines, pw, other), strings.ReplaceAll(env, pw, other))
			if strings.Contains(msg, pw) && !strings.Contains(without, pw) {
				t.Fatalf("the message repeats the password %q: %s", pw, msg)
			}
		}
	})
}

// parseMessage parses lines as redlock's arguments with env as
// $REDLOCK_SERVERS, opens the servers parsed, and returns the message the
// tool would print: "" when all is well. A failure that is not a usage
// error or a request for help is returned as "not a usage error: ...".
func parseMessage(lines, env string) string {
	args := strings.Split(lines, "\n")
	getenv := func(k string) string {
		if k == "REDLOCK_SERVERS" {
			return env
		}
		return ""
	}
	var (
		urls []string
		err  error
	)
	switch args[0] {
	case "run":
		var c *runConfig
		if c, err = parseRun(args[1:], getenv); err == nil {
			urls = c.servers
		}
	case "status", "leader":
		var c *statusConfig
		if c, err = parseStatus(args[0], args[1:], getenv); err == nil {
			urls = c.servers
		}
	default:
		err = helpFor(args)
	}
	if err == nil {
		var s *servers
		if s, err = openServers(urls); err == nil {
			s.close() //nolint:errcheck // nothing was dialed
			return ""
		}
	}
	var (
		ee *exitError
		eh errHelp
	)
	switch {
	case errors.As(err, &eh):
		return ""
	case errors.As(err, &ee) && ee.code == exitUsage:
		return secretsOf(args, env).hide(oneLine(ee.msg)) // as the tool's say prints it
	}
	return "not a usage error: " + err.Error()
}

// passwords returns the passwords of six or more bytes of the URLs among
// the arguments and the comma-separated entries of either input, as
// given and as decoded.
func passwords(lines, servers string) []string {
	var pws []string
	for _, s := range strings.FieldsFunc(lines+"\n"+servers, func(r rune) bool { return r == '\n' || r == ',' || r == '=' }) {
		s = strings.TrimSpace(s)
		if u, err := url.Parse(s); err == nil && u.User != nil {
			if pw, ok := u.User.Password(); ok && len(pw) >= 6 {
				pws = append(pws, pw)
			}
		}
		if _, rest, ok := strings.Cut(s, "://"); ok {
			if at := strings.LastIndex(rest, "@"); at >= 0 {
				if _, pw, ok := strings.Cut(rest[:at], ":"); ok && len(pw) >= 6 {
					pws = append(pws, pw)
				}
			}
		}
	}
	return pws
}
