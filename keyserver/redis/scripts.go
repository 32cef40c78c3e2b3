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
	keys int            // how many of its arguments are keys
	hash string         // hex SHA-1 of src: the name EVALSHA and SCRIPT LOAD use
	pool *redigo.Script // the pooled mode runs it through redigo

	// The first two arguments of EVALSHA and EVAL, boxed once so that the
	// pipelined writer does not box them for every call.
	hashArg, srcArg, keysArg any
}

func newScript(keys int, src string) *script {
	sum := sha1.Sum([]byte(src)) //nolint:gosec // see the import
	s := &script{src: src, keys: keys, hash: hex.EncodeToString(sum[:]), pool: redigo.NewScript(keys, src)}
	s.hashArg, s.srcArg, s.keysArg = s.hash, s.src, keys
	return s
}

// setScript is Acquire and Extend, delScript is Release (and publishes it),
// the fenced ones are the Fencer's and holderScript is the Notifier's
// AcquireOrHolder; their text is shared with every Redis key server (see
// internal/redisscript).
var (
	setScript    = newScript(1, redisscript.Set)
	delScript    = newScript(1, redisscript.Del)
	fencedScript = newScript(2, redisscript.AcquireFenced)
	raiseScript  = newScript(1, redisscript.RaiseFence)
	holderScript = newScript(1, redisscript.AcquireOrHolder)
)

// scripts are loaded on every new pipelined connection.
var scripts = []*script{setScript, delScript, fencedScript, raiseScript, holderScript}
