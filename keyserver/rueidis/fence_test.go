package rueidis_test

import (
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goredlock/goredlock/internal/redisscript"
	"github.com/goredlock/goredlock/internal/redistest"
	"github.com/goredlock/goredlock/keyserver"
	redigoks "github.com/goredlock/goredlock/keyserver/redis"
)

// The fenced script takes the lock key and its fence key, which Redis
// Cluster accepts only in one hash slot: keyserver.FenceKey puts them
// there, with or without a hash tag of the caller's.
func TestFencedCallsOnACluster(t *testing.T) {
	addr := startClusterNode(t)
	s := newServer(t, newClient(t, addr)) // rueidis finds the cluster by itself
	for _, key := range []string{"orders", "{shop}orders", "a{b"} {
		require.Equal(t, do(t, addr, "CLUSTER", "KEYSLOT", key), do(t, addr, "CLUSTER", "KEYSLOT", keyserver.FenceKey(key)), key)
		ok, fence, err := s.AcquireFenced(bg, key, "t", time.Minute)
		require.NoError(t, err, "%s: no CROSSSLOT", key)
		assert.True(t, ok, key)
		assert.Zero(t, fence, key)
		prev, err := s.RaiseFence(bg, key, 42)
		require.NoError(t, err, key)
		assert.Zero(t, prev, key)
		ok, fence, err = s.AcquireFenced(bg, key, "t", time.Minute)
		require.NoError(t, err, key)
		assert.True(t, ok, "%s: renewed by its holder", key)
		assert.Equal(t, uint64(42), fence, key)
		assert.Equal(t, "42", do(t, addr, "GET", keyserver.FenceKey(key)), key)
		assert.Equal(t, int64(-1), do(t, addr, "PTTL", keyserver.FenceKey(key)), "%s: the counter has no TTL", key)
	}

	// A '}' without a tag of the key's own makes FenceKey's tag a prefix
	// of the key: another slot, which Redis would refuse. rueidis refuses
	// to build the command, by a panic the call turns into an error;
	// nothing is written.
	key := "a}b"
	require.NotEqual(t, do(t, addr, "CLUSTER", "KEYSLOT", key), do(t, addr, "CLUSTER", "KEYSLOT", keyserver.FenceKey(key)))
	_, _, err := s.AcquireFenced(bg, key, "t", time.Minute)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "CROSSSLOT")
	assert.Contains(t, err.Error(), `acquire "a}b"`, "the error names the operation and the lock key")
	assert.Nil(t, do(t, addr, "GET", key))
}

// Every Redis key server runs the same scripts on the same keys, so a
// counter one of them raised is the counter the others read.
func TestFenceCountersSharedWithTheRedisKeyServer(t *testing.T) {
	single := redistest.Start(t, 1).Nodes[0].Addr()
	cluster := startClusterNode(t)
	for _, tc := range []struct {
		name   string
		addr   string
		client rueidis.Client
	}{
		{"single node", single, newClient(t, single)},
		{"cluster", cluster, newClient(t, cluster)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ours := newServer(t, tc.client)
			rs, err := redigoks.FromURL("redis://" + tc.addr)
			require.NoError(t, err)
			t.Cleanup(func() { rs.Close() })
			fencer := map[string]keyserver.Fencer{"rueidis": ours, "redis": rs}
			step := func(by, what string, call func(keyserver.Fencer) (any, error), want any) {
				t.Helper()
				got, err := call(fencer[by])
				require.NoError(t, err, "%s by %s", what, by)
				require.Equal(t, want, got, "%s by %s", what, by)
			}
			acquire := func(token string) func(keyserver.Fencer) (any, error) {
				return func(f keyserver.Fencer) (any, error) {
					ok, fence, err := f.AcquireFenced(bg, "report", token, time.Minute)
					return fmt.Sprint(ok, fence), err
				}
			}
			raise := func(fence uint64) func(keyserver.Fencer) (any, error) {
				return func(f keyserver.Fencer) (any, error) { return f.RaiseFence(bg, "report", fence) }
			}
			step("rueidis", "AcquireFenced(a)", acquire("a"), "true 0")
			step("redis", "RaiseFence(5)", raise(5), uint64(0))
			step("rueidis", "RaiseFence(3) below 5", raise(3), uint64(5))
			step("redis", "AcquireFenced(b) while a holds it", acquire("b"), "false 5")
			step("rueidis", "AcquireFenced(b) while a holds it", acquire("b"), "false 5")
			step("rueidis", "RaiseFence(9)", raise(9), uint64(5))
			step("redis", "AcquireFenced(a) by its holder", acquire("a"), "true 9")
			step("redis", "RaiseFence(9) again", raise(9), uint64(9))

			for _, src := range []string{redisscript.AcquireFenced, redisscript.RaiseFence} {
				digest := sha1.Sum([]byte(src))
				assert.Equal(t, []any{int64(1)}, do(t, tc.addr, "SCRIPT", "EXISTS", hex.EncodeToString(digest[:])),
					"one script cache entry, under the digest every Redis key server uses")
			}
		})
	}
}

func TestWrongTypeFenceCounterIsAnErrorAndLeftAlone(t *testing.T) {
	addr := redistest.Start(t, 1).Nodes[0].Addr()
	s := newServer(t, newClient(t, addr))
	do(t, addr, "RPUSH", keyserver.FenceKey("jobs"), "x")
	_, _, err := s.AcquireFenced(bg, "jobs", "t", time.Minute)
	require.Error(t, err)
	assert.Contains(t, err.Error(), `acquire "jobs"`)
	assert.Contains(t, err.Error(), "WRONGTYPE")
	assert.ErrorIs(t, err, keyserver.ErrPermanent)
	assert.Nil(t, do(t, addr, "GET", "jobs"), "the script reads the counter before it writes the lock key")
	_, err = s.RaiseFence(bg, "jobs", 1)
	require.Error(t, err)
	assert.Contains(t, err.Error(), `raise fence "jobs"`)
	assert.ErrorIs(t, err, keyserver.ErrPermanent)
	assert.Equal(t, int64(1), do(t, addr, "LLEN", keyserver.FenceKey("jobs")))
}

func TestRaiseFenceRefusesAFenceAboveMaxFence(t *testing.T) {
	addr := redistest.Start(t, 1).Nodes[0].Addr()
	s := newServer(t, newClient(t, addr))
	_, err := s.RaiseFence(bg, "k", keyserver.MaxFence+1)
	require.ErrorIs(t, err, keyserver.ErrInvalidArgument)
	assert.Nil(t, do(t, addr, "GET", keyserver.FenceKey("k")), "nothing was sent")
	prev, err := s.RaiseFence(bg, "k", keyserver.MaxFence)
	require.NoError(t, err)
	assert.Zero(t, prev)
	assert.Equal(t, fmt.Sprint(uint64(keyserver.MaxFence)), do(t, addr, "GET", keyserver.FenceKey("k")))
}
