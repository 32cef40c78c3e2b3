package redis_test

import (
	"strings"
	"testing"
	"time"

	redigo "github.com/gomodule/redigo/redis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goredlock/goredlock/internal/redistest"
	"github.com/goredlock/goredlock/keyserver"
	"github.com/goredlock/goredlock/keyserver/redis"
)

// TestWaitNeedsThePipelinedConnection: over a transport whose writes may
// go out on several connections, WithWait refuses every grant before it
// writes, rather than count a vote no WAIT confirmed.
func TestWaitNeedsThePipelinedConnection(t *testing.T) {
	node := redistest.Start(t, 1).Nodes[0]
	pool := &redigo.Pool{Dial: func() (redigo.Conn, error) { return redigo.Dial("tcp", node.Addr()) }}
	t.Cleanup(func() { pool.Close() })
	s := redis.New(pool, redis.WithWait(1))
	t.Cleanup(func() { s.Close() })
	_, err := s.Acquire(bg, "k", "t", time.Second)
	assert.ErrorIs(t, err, keyserver.ErrInvalidArgument)
	assert.ErrorContains(t, err, "pipelined connection")
	assert.Nil(t, node.MustDo("GET", "k"), "nothing written")
}

// TestWaitAOF: waitaof=1,0 on a node with appendfsync always confirms a
// grant where the engine has WAITAOF (Redis 7.2 and later, Valkey), and
// names the command where it has not (the vote fails, never a grant).
func TestWaitAOF(t *testing.T) {
	node := redistest.Start(t, 1, redistest.WithAppendFsyncAlways()).Nodes[0]
	info, err := redigo.String(node.MustDo("INFO", "server"), nil)
	require.NoError(t, err)
	s := fromURL(t, node.URL("")+"?waitaof=1,0")
	ok, err := s.Acquire(bg, "k", "t", time.Second)
	if strings.Contains(info, "redis_version:7.0") || strings.Contains(info, "redis_version:6.") {
		assert.ErrorContains(t, err, "WAITAOF", "an engine without WAITAOF: the command is named")
		assert.False(t, ok)
		return
	}
	require.NoError(t, err)
	assert.True(t, ok)
}
