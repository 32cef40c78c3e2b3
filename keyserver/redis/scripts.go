package redis

import (
	"crypto/sha1" //nolint:gosec // Redis names scripts by their SHA-1; no security rests on it
	"encoding/hex"

	redigo "github.com/gomodule/redigo/redis"

	"github.com/goredlock/goredlock/internal/redisscript"
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

// setScript is Acquire and Extend, delScript is Release; their text is
// shared with every Redis key server (see internal/redisscript).
var (
	setScript = newScript(redisscript.Set)
	delScript = newScript(redisscript.Del)
)

// scripts are loaded on every new pipelined connection.
var scripts = []*script{setScript, delScript}
