package main

import (
	"encoding/json"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goredlock/goredlock/internal/redistest"
	"github.com/goredlock/goredlock/keyserver/redis"
)

// TestDoctor is rule 18: redlock doctor over a healthy server, a replica,
// an allkeys-lru server with maxmemory set, a least-privilege user and a
// dead port gives each its verdict, in text and in --json (parsed back
// here), and exits 1; over healthy servers alone, 0.
func TestDoctor(t *testing.T) {
	t.Parallel()
	c := redistest.Start(t, 4)
	healthy, primary, replica, evicting := c.Nodes[0], c.Nodes[1], c.Nodes[2], c.Nodes[3]
	replica.ReplicaOf(primary)
	evicting.MustDo("CONFIG", "SET", "maxmemory", "100mb")
	evicting.MustDo("CONFIG", "SET", "maxmemory-policy", "allkeys-lru")
	primary.MustDo("ACL", "SETUSER", "app", "on", ">pw", "~*", "&*", "+@all", "-@dangerous")
	leastPriv, err := url.Parse(primary.URL(""))
	require.NoError(t, err)
	leastPriv.User = url.UserPassword("app", "pw")
	dead := redistest.Start(t, 1).Nodes[0]
	dead.Kill()
	urls := []string{healthy.URL(""), replica.URL(""), evicting.URL(""), leastPriv.String(), dead.URL("")}
	servers := "--servers=" + strings.Join(urls, ",")

	r := run(t, env(), "doctor", servers)
	assert.Equal(t, exitUnsafe, r.code, r.stderr)
	assert.NotContains(t, r.stdout+r.stderr, "pw@", "no password shown")
	lines := strings.Split(r.stdout, "\n")
	verdict := map[string]string{}
	for _, l := range lines {
		if addr, rest, ok := strings.Cut(l, ": "); ok && !strings.HasPrefix(l, " ") {
			verdict[addr] = rest
		}
	}
	assert.True(t, strings.HasPrefix(verdict[healthy.Addr()], "usable ("), verdict[healthy.Addr()])
	assert.True(t, strings.HasPrefix(verdict[replica.Addr()], "UNUSABLE"), verdict[replica.Addr()])
	assert.True(t, strings.HasPrefix(verdict[evicting.Addr()], "UNUSABLE"), verdict[evicting.Addr()])
	assert.True(t, strings.HasPrefix(verdict[primary.Addr()], "usable"), "least privilege: %s", verdict[primary.Addr()])
	assert.True(t, strings.HasPrefix(verdict[dead.Addr()], "UNUSABLE"), verdict[dead.Addr()])
	for _, want := range []string{"problem: a replica", "can evict lock keys", "problem: unreachable",
		"restart detection: degraded", "+info", "verdict: 3 of 5 servers unusable or unsafe"} {
		assert.Contains(t, r.stdout, want)
	}
	require.Len(t, r.lines(), 1, r.stderr)
	assert.Contains(t, r.lines()[0], "3 of 5 servers unusable or unsafe")

	r = run(t, env(), "doctor", "--json", servers)
	assert.Equal(t, exitUnsafe, r.code, r.stderr)
	var out struct {
		Usable  bool              `json:"usable"`
		Servers []redis.Diagnosis `json:"servers"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &out), r.stdout)
	assert.Equal(t, 1, strings.Count(r.stdout, "\n"), "one line")
	assert.False(t, out.Usable)
	require.Len(t, out.Servers, 5)
	usable := make([]bool, 5)
	for i, d := range out.Servers {
		assert.Equal(t, urlHost(t, urls[i]), d.Server)
		usable[i] = len(d.Problems) == 0
	}
	assert.Equal(t, []bool{true, false, false, true, false}, usable)
	assert.Equal(t, "replica", out.Servers[1].Role)
	assert.Equal(t, "allkeys-lru, maxmemory 104857600", out.Servers[2].Eviction)
	assert.Empty(t, out.Servers[3].Engine, "INFO denied to the least-privilege user")
	assert.NotEmpty(t, out.Servers[3].Warnings)
	assert.Contains(t, out.Servers[4].Problems[0], "unreachable")

	r = run(t, env(), "doctor", "--json", "--servers", healthy.URL(""))
	assert.Equal(t, exitOK, r.code, r.stderr)
	assert.Empty(t, r.stderr)
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &out))
	assert.True(t, out.Usable)
	require.Len(t, out.Servers, 1)
	assert.Equal(t, "master", out.Servers[0].Role)
	for _, f := range out.Servers[0].Features {
		assert.Equal(t, "works", f.Support, "%+v", f)
	}
}

// urlHost is a URL's host:port.
func urlHost(t *testing.T, raw string) string {
	t.Helper()
	u, err := url.Parse(raw)
	require.NoError(t, err)
	return u.Host
}
