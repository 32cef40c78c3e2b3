package redis

import "embed"

// The Lua scripts of the Server, one per operation, so that the owner
// check and the write are atomic. Each is a file under lua/, the whole
// script Redis runs, whose header says what it does, its KEYS, ARGV and
// reply. Each spends as few commands inside Redis as it can: Redis counts
// each redis.call as a command, and under contention they are the cost of
// a grant. A Server runs a script by the digest SCRIPT LOAD gave for it,
// and sends its source only until it knows that digest, after NOSCRIPT,
// or always where SCRIPT LOAD is refused (see evalAny): the scripts'
// comments are kept short, as they travel with the source.
//
// The lock's scripts take the lock key in KEYS[1] and, where there is
// one, the key beside it in KEYS[2] (layout.LineKey or FenceKey, in
// its Cluster slot); ARGV[1] is the caller's token, ARGV[2] the TTL in
// milliseconds, and ARGV[3], where there is one, the caller's promise
// (see promise). Numbers that Go also knows, such as layout.TokenLen,
// are written out in the Lua; TestLuaNumbers checks them against Go's.

// The lock's scripts.
var (
	setScript     = newScript("acquire.lua")           // Acquire, past its SET NX, and Extend
	holderScript  = newScript("acquire_or_holder.lua") // AcquireOrHolder
	lineScript    = newScript("acquire_in_line.lua")   // AcquireInLine
	releaseScript = newScript("release.lua")           // Release
	leaveScript   = newScript("leave_line.lua")        // LeaveLine
	fencedScript  = newScript("acquire_fenced.lua")    // AcquireFenced
	raiseScript   = newScript("raise_fence.lua")       // RaiseFence
)

// luaFiles are the scripts' sources.
//
//go:embed lua/*.lua
var luaFiles embed.FS

// script is one Lua script of the Server; each Server keeps the digest
// SCRIPT LOAD gave it under the script's id.
type script struct {
	id   int
	name string // its file under lua/
	src  string
}

// scripts is every script, by id.
var scripts []*script

// newScript is the script in the file name under lua/.
func newScript(name string) *script {
	src, err := luaFiles.ReadFile("lua/" + name)
	if err != nil {
		panic("redis: no script " + name) // a typo, which every test of the package finds
	}
	s := &script{id: len(scripts), name: name, src: string(src)}
	scripts = append(scripts, s)
	return s
}
