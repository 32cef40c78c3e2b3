package redis

import (
	"embed"
	"strings"
)

// The Lua scripts of the Server, one per operation and each a file under
// lua/, so that the owner check and the write are atomic (see "Scripts" in
// docs/design.md).

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
	// grants: it may grant or extend a hold, or raise a fence: a write
	// that a durable vote waits for (see durability). Releases, leaving a
	// line and reads need not.
	grants bool
}

// scripts is every script, by id.
var scripts []*script

// newScript is the script in the file name under lua/.
func newScript(name string) *script {
	src, err := luaFiles.ReadFile("lua/" + name)
	if err != nil {
		panic("redis: no script " + name) // a typo, which every test of the package finds
	}
	s := &script{id: len(scripts), name: name, src: string(src),
		grants: strings.HasPrefix(name, "acquire") || strings.HasPrefix(name, "extend") || name == "raise_fence.lua"}
	scripts = append(scripts, s)
	return s
}
