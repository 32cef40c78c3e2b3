package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/goredlock/goredlock/internal/redistest"
)

// TestPasswordNeverPrinted: whatever goes wrong with a URL that carries a
// password, no message of run or status repeats it.
func TestPasswordNeverPrinted(t *testing.T) {
	t.Parallel()
	const right, wrong = "Right-pw-4711", "Wrong-pw-0815"
	secured := redistest.Start(t, 3, redistest.WithPassword(right))
	open := redistest.Start(t, 1)

	r := run(t, env("REDLOCK_SERVERS="+strings.Join(secured.URLs(right), ",")), "run", "job", "--", "true")
	assert.Equal(t, exitOK, r.code, r.stderr)
	assert.Empty(t, r.stderr)

	for name, urls := range map[string][]string{
		"wrong password":            secured.URLs(wrong),
		"password the server lacks": open.URLs(wrong),
		"mixed":                     {secured.Nodes[0].URL(wrong), secured.Nodes[1].URL(right), open.Nodes[0].URL(wrong)},
		"server unreachable":        {secured.Nodes[0].URL(wrong), "redis://:" + wrong + "@127.0.0.1:1", secured.Nodes[1].URL(wrong)},
	} {
		environ := env("REDLOCK_SERVERS=" + strings.Join(urls, ","))
		r := run(t, environ, "run", "job", "--", "true")
		assert.Equal(t, exitUnavailable, r.code, "%s: %s", name, r.stderr)
		assert.Len(t, r.lines(), 1, "%s: %s", name, r.stderr)
		r2 := run(t, environ, "status", "job")
		assert.Equal(t, exitUnavailable, r2.code, "%s: %s", name, r2.stderr)
		for _, out := range []string{r.stdout, r.stderr, r2.stdout, r2.stderr} {
			assert.NotContains(t, out, wrong, name)
			assert.NotContains(t, out, right, name)
		}
	}
}

// TestPasswordOfAMisplacedURLNeverPrinted: a URL given where the command
// line wants something else (after NAME, as a flag's value) is quoted by
// the usage error with its password hidden (FuzzArgs' findings).
func TestPasswordOfAMisplacedURLNeverPrinted(t *testing.T) {
	t.Parallel()
	const pw = "Secret-pw-4711"
	for _, args := range [][]string{
		{"run", "job", "redis://u:" + pw + "@host", "--", "true"},
		{"run", "--ttl", "redis://:" + pw + "@host", "job", "--", "true"},
		{"run", "--wait=redis://:" + pw + "@host", "job", "--", "true"},
		{"status", "job", "redis://:" + pw + "@host"},
	} {
		r := run(t, env(), args...)
		assert.Equal(t, exitUsage, r.code, "%q: %s", args, r.stderr)
		assert.NotContains(t, r.stderr, pw, "%q", args)
		assert.Contains(t, r.stderr, ":xxxxx@host", "%q: the message still shows where the URL was", args)
	}
}
