package redis

import (
	"embed"
	"fmt"
	"regexp"
	"strings"

	"github.com/goredlock/goredlock/internal/layout"
	"github.com/goredlock/goredlock/keyserver"
)

// The Lua scripts of the Server, one per operation and each a file under
// lua/, so that the owner check and the write are atomic (see "Scripts" in
// docs/design.md). Each runs after the prelude it calls (see prelude).

// The lock's scripts; AcquireOrHolder and LeaveLine run the set's
// (acquire_all.lua, leave_lines.lua) for one key.
var (
	setScript     = newScript("acquire.lua")         // Acquire, past its SET NX, Extend and AcquireFenced
	lineScript    = newScript("acquire_in_line.lua") // AcquireInLine
	releaseScript = newScript("release.lua")         // Release
	releaseInLine = newScript("release_in_line.lua") // ReleaseInLine
	raiseScript   = newScript("raise_fence.lua")     // RaiseFence
)

// luaFiles are the scripts' sources, and the prelude's.
//
//go:embed lua/*.lua
var luaFiles embed.FS

// script is one Lua script of the Server; each Server keeps the digest
// SCRIPT LOAD gave it under the script's id.
type script struct {
	id   int
	name string // its file under lua/
	src  string // the prelude it calls, then the file
	// grants: it may grant or extend a hold, or raise a fence: a write
	// that a durable vote waits for (see durability). Releases, leaving a
	// line and reads need not.
	grants bool
}

// scripts is every script, by id.
var scripts []*script

// newScript is the script in the file name under lua/, after its
// prelude.
func newScript(name string) *script {
	src, err := luaFiles.ReadFile("lua/" + name)
	if err != nil || name == preludeFile {
		panic("redis: no script " + name) // a typo, which every test of the package finds
	}
	s := &script{id: len(scripts), name: name, src: withPrelude(string(src)),
		grants: strings.HasPrefix(name, "acquire") || strings.HasPrefix(name, "extend") || name == "raise_fence.lua"}
	scripts = append(scripts, s)
	return s
}

// preludeFile holds the helpers the scripts share: after a header of
// comments, paragraphs of one local function each, with its comment (no
// blank line within).
const preludeFile = "prelude.lua"

// luaConstants is the prelude's first line: the numbers the scripts
// share with Go, so that none writes them out.
var luaConstants = fmt.Sprintf("local TOKEN, RANK, MAX_INSPECTED, MAX_FREE_HINT, READER, UNRANKED = %d, %d, %d, %d, %d, %d\n",
	layout.TokenLen, layout.RankLen, keyserver.MaxInspected, layout.MaxFreeHint, readerMark, primWatch[0])

// luaHelper is one function of the prelude: its name, its code without
// comments, and how a call of it reads.
type luaHelper struct {
	name, code string
	call       *regexp.Regexp
}

// luaHelpers are the prelude's functions, in its order.
var luaHelpers = readPrelude()

func readPrelude() []luaHelper {
	src, err := luaFiles.ReadFile("lua/" + preludeFile)
	if err != nil {
		panic("redis: no " + preludeFile)
	}
	var hs []luaHelper
	for i, para := range strings.Split(string(src), "\n\n") {
		var code strings.Builder
		for _, line := range strings.SplitAfter(para, "\n") {
			if !strings.HasPrefix(strings.TrimSpace(line), "--") {
				code.WriteString(line)
			}
		}
		name, ok := strings.CutPrefix(code.String(), "local function ")
		if !ok && i == 0 && code.Len() == 0 {
			continue // the header
		}
		if !ok || !strings.HasSuffix(strings.TrimSpace(code.String()), "end") {
			panic("redis: " + preludeFile + ": a paragraph that is no local function")
		}
		name, _, _ = strings.Cut(name, "(")
		hs = append(hs, luaHelper{name: name, code: strings.TrimSuffix(code.String(), "\n") + "\n",
			call: regexp.MustCompile(`(^|[^.:\w])` + name + `\(`)})
	}
	return hs
}

// withPrelude is body after luaConstants and the prelude's functions that
// it calls, and those they call: a local function is a closure made at
// every run, which a script that does not call it need not pay for.
func withPrelude(body string) string {
	used := make([]bool, len(luaHelpers))
	for i := len(luaHelpers) - 1; i >= 0; i-- { // a helper calls only those above it
		h := luaHelpers[i]
		used[i] = used[i] || h.call.MatchString(body)
		if used[i] {
			for j := range i {
				used[j] = used[j] || luaHelpers[j].call.MatchString(h.code)
			}
		}
	}
	var b strings.Builder
	b.WriteString(luaConstants)
	for i, h := range luaHelpers {
		if used[i] {
			b.WriteString(h.code)
		}
	}
	b.WriteString(body)
	return b.String()
}
