package redis

import (
	"crypto/sha1" //nolint:gosec // Redis names scripts by their SHA-1; no security rests on it
	"encoding/hex"

	redigo "github.com/gomodule/redigo/redis"
)

// script is one Lua script and the names Redis knows it by. Each operation
// is one script, so that the owner check and the write are atomic.
type script struct {
	src  string
	hash string         // hex SHA-1 of src: the name EVALSHA and SCRIPT LOAD use
	pool *redigo.Script // the pooled mode runs it through redigo

	// The first argument of EVALSHA and EVAL, boxed once so that the
	// pipelined writer does not box them for every call.
	hashArg, srcArg any
}

func newScript(src string) *script {
	sum := sha1.Sum([]byte(src)) //nolint:gosec // see the import
	s := &script{src: src, hash: hex.EncodeToString(sum[:]), pool: redigo.NewScript(1, src)}
	s.hashArg, s.srcArg = s.hash, s.src
	return s
}

// setScript stores KEYS[1]=ARGV[1] for ARGV[2] ms if the key is absent, or
// resets the TTL if it already holds ARGV[1]. It is both Acquire and
// Extend: for Redis "store if absent" and "re-create if absent (a restarted
// server)" are the same rule. GET fails on a key of another type, which
// aborts the script before it writes anything.
var setScript = newScript(`
local v = redis.call('GET', KEYS[1])
if v == false then
	redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
	return 1
end
if v == ARGV[1] then
	redis.call('PEXPIRE', KEYS[1], ARGV[2])
	return 1
end
return 0
`)

// delScript deletes KEYS[1] if it holds ARGV[1].
var delScript = newScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then
	return redis.call('DEL', KEYS[1])
end
return 0
`)

// scripts are loaded on every new pipelined connection.
var scripts = []*script{setScript, delScript}
