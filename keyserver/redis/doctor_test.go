package redis_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goredlock/goredlock/internal/redistest"
	"github.com/goredlock/goredlock/keyserver/redis"
)

// feature returns d's feature called name.
func feature(t *testing.T, d redis.Diagnosis, name string) redis.Feature {
	t.Helper()
	for _, f := range d.Features {
		if f.Name == name {
			return f
		}
	}
	t.Fatalf("%s: no feature %q in %+v", d.Server, name, d.Features)
	return redis.Feature{}
}

// TestDiagnose is rule 18: Diagnose tells, per server, what it is and
// what goredlock will do there, and finds unusable or unsafe a replica, a
// policy that can evict lock keys, one store named twice, a server
// without scripting and a dead port; a least-privilege user is usable,
// with what it cannot read said.
func TestDiagnose(t *testing.T) {
	cluster := redistest.Start(t, 6)
	healthy, primary, replica, evicting, leastPriv, noScripts := cluster.Nodes[0], cluster.Nodes[1], cluster.Nodes[2], cluster.Nodes[3], cluster.Nodes[4], cluster.Nodes[5]
	replica.ReplicaOf(primary)
	evicting.MustDo("CONFIG", "SET", "maxmemory", "100mb")
	evicting.MustDo("CONFIG", "SET", "maxmemory-policy", "allkeys-lru")
	dead := redistest.Start(t, 1).Nodes[0]
	dead.Kill()
	ctx, cancel := context.WithTimeout(bg, 30*time.Second)
	defer cancel()

	servers := []*redis.Server{
		fromURL(t, healthy.URL("")),
		fromURL(t, replica.URL("")),
		fromURL(t, evicting.URL("")),
		fromURL(t, userURL(t, leastPriv, "~*", "&*", "+@all", "-@dangerous")),
		fromURL(t, dead.URL("")),
		fromURL(t, userURL(t, noScripts, "~*", "&*", "+@all", "-@scripting", "-@pubsub")),
	}
	ds := redis.Diagnose(ctx, servers...)
	require.Len(t, ds, len(servers))
	for i, d := range ds {
		assert.Equal(t, servers[i].String(), d.Server)
	}

	d := ds[0]
	assert.Empty(t, d.Problems, "healthy: %v", d.Problems)
	engine, version := "redis", ""
	for _, line := range strings.Split(redistest.Text(healthy.MustDo("INFO", "server")), "\r\n") {
		k, v, _ := strings.Cut(line, ":")
		switch k {
		case "server_name":
			engine = v // valkey
		case "redis_version", "valkey_version":
			if version == "" || k != "redis_version" {
				version = v
			}
		}
	}
	assert.Equal(t, engine, d.Engine)
	assert.Equal(t, version, d.Version)
	assert.Equal(t, "master", d.Role)
	assert.False(t, d.Cluster)
	assert.Equal(t, "no AOF, no RDB snapshots", d.Persistence)
	assert.Equal(t, "noeviction", d.Eviction)
	assert.NotEmpty(t, d.Store)
	for _, f := range d.Features {
		assert.Equal(t, "works", f.Support, "%s: %+v", d.Server, f)
	}
	assert.Empty(t, d.Warnings)

	d = ds[1]
	assert.NotEmpty(t, d.Problems)
	assert.Equal(t, "replica", d.Role)
	assert.Contains(t, strings.Join(d.Problems, "; "), "a replica")

	d = ds[2]
	assert.NotEmpty(t, d.Problems)
	assert.Equal(t, "allkeys-lru, maxmemory 104857600", d.Eviction)
	assert.Contains(t, strings.Join(d.Problems, "; "), "can evict lock keys")

	d = ds[3]
	assert.Empty(t, d.Problems, "least privilege: %v", d.Problems)
	assert.Empty(t, d.Engine, "INFO denied")
	assert.Equal(t, "master", d.Role, "it took the marker")
	assert.Equal(t, "unknown", d.Eviction)
	assert.Equal(t, "works", feature(t, d, "locks").Support)
	assert.Equal(t, "works", feature(t, d, "wake-ups").Support)
	assert.Equal(t, "degraded", feature(t, d, "restart detection").Support)
	assert.Contains(t, feature(t, d, "restart detection").Detail, "+info")
	assert.Equal(t, "degraded", feature(t, d, "durability").Support)
	assert.Contains(t, feature(t, d, "durability").Detail, "+config|get")
	assert.NotEmpty(t, d.Warnings)

	d = ds[4]
	assert.NotEmpty(t, d.Problems)
	assert.Contains(t, strings.Join(d.Problems, "; "), "unreachable")
	assert.Empty(t, d.Features)

	d = ds[5]
	assert.NotEmpty(t, d.Problems)
	locks := feature(t, d, "locks")
	assert.Equal(t, "refused", locks.Support)
	assert.Contains(t, locks.Detail, "EVAL refused")
	assert.Contains(t, locks.Detail, "+@scripting")
	wake := feature(t, d, "wake-ups")
	assert.Equal(t, "degraded", wake.Support)
	assert.Contains(t, wake.Detail, "waiters poll")
	assert.Equal(t, "degraded", feature(t, d, "script digests").Support)

	// One store under two names.
	twice := redis.Diagnose(ctx, fromURL(t, healthy.URL("")), fromURL(t, "redis://localhost:"+strings.Split(healthy.Addr(), ":")[1]))
	for _, d := range twice {
		assert.NotEmpty(t, d.Problems)
		assert.Contains(t, strings.Join(d.Problems, "; "), "one store named 2 times")
	}
	assert.Equal(t, twice[0].Store, twice[1].Store)
}

// TestDiagnoseClosedServer: a closed Server is unusable, not a panic.
func TestDiagnoseClosedServer(t *testing.T) {
	node := redistest.Start(t, 1).Nodes[0]
	s := fromURL(t, node.URL(""))
	require.NoError(t, s.Close())
	ds := redis.Diagnose(context.Background(), s, nil)
	assert.NotEmpty(t, ds[0].Problems)
	assert.NotEmpty(t, ds[1].Problems)
}
