package redis

import (
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	redigo "github.com/gomodule/redigo/redis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goredlock/goredlock/internal/layout"
	"github.com/goredlock/goredlock/internal/redistest"
	"github.com/goredlock/goredlock/keyserver"
)

// TestLuaFilesAreTheScripts checks that the embedded files and the
// Server's scripts are the same set: a file no script runs is an error,
// as is a script loaded twice (a script without a file fails newScript).
// The prelude is no script: each script runs after the helpers it calls.
func TestLuaFilesAreTheScripts(t *testing.T) {
	files, err := fs.Glob(luaFiles, "lua/*.lua")
	require.NoError(t, err)
	used := map[string]bool{preludeFile: true}
	for _, s := range scripts {
		assert.False(t, used[s.name], "lua/%s is loaded twice", s.name)
		used[s.name] = true
	}
	for _, f := range files {
		assert.True(t, used[path.Base(f)], "%s is no script of the Server", f)
	}
	assert.Len(t, files, len(scripts)+1)
}

// TestLuaPrelude checks that a script runs after the prelude's helpers
// that it calls and those they call, in the prelude's order, and no
// others: each is a closure made at every run.
func TestLuaPrelude(t *testing.T) {
	require.NotEmpty(t, luaHelpers, "the prelude's functions")
	for _, h := range luaHelpers {
		called := false
		for _, s := range scripts {
			called = called || strings.Contains(s.src, "local function "+h.name+"(")
		}
		assert.True(t, called, "no script calls the prelude's %s", h.name)
	}
	for name, want := range map[string][]string{
		"release.lua":         {"tell", "handOver"},
		"release_in_line.lua": {"join", "tell", "handOver"},
		"acquire.lua":         {"take"},
		"release_hold.lua":    {"clock", "tell", "live", "passOn", "enlist"},
		"acquire_in_line.lua": {"plain", "rank", "holder", "join"},
		"raise_fence.lua":     nil,
	} {
		var got []string
		for _, s := range scripts {
			if s.name != name {
				continue
			}
			require.True(t, strings.HasPrefix(s.src, luaConstants), "%s begins with the constants", name)
			for _, h := range luaHelpers {
				if strings.Contains(s.src, "local function "+h.name+"(") {
					got = append(got, h.name)
				}
			}
			assert.NotContains(t, s.src[:len(s.src)-len(luaFile(t, name))], "--", "%s: the prelude travels without its comments", name)
		}
		assert.Equal(t, want, got, "the helpers %s runs after", name)
	}
}

// luaFile is the text of the file name under lua/.
func luaFile(t *testing.T, name string) string {
	t.Helper()
	src, err := luaFiles.ReadFile("lua/" + name)
	require.NoError(t, err)
	return string(src)
}

// TestLuaNumbers checks that no file under lua/ writes out a number that
// Go knows: the constants of the prelude's first line (luaConstants)
// stand for them. The dot of a ranked token, which layout.RankOf finds at
// index 16, is written out: counted from 1, 17.
func TestLuaNumbers(t *testing.T) {
	known := []int{layout.TokenLen, layout.TokenLen + 1, layout.RankLen, keyserver.MaxInspected,
		layout.MaxFreeHint, 2 * layout.MaxFreeHint, readerMark, int(primWatch[0])}
	dot := regexp.MustCompile(`string\.byte\(\w+, (\d+)\) == 46`)
	files, err := fs.Glob(luaFiles, "lua/*.lua")
	require.NoError(t, err)
	dots := 0
	for _, f := range files {
		src := luaFile(t, path.Base(f))
		for _, n := range known {
			assert.NotRegexp(t, `\b`+strconv.Itoa(n)+`\b`, src, "%s writes out %d", f, n)
		}
		for _, m := range dot.FindAllStringSubmatch(src, -1) {
			assert.Equal(t, strconv.Itoa(16+1), m[1], "%s: %s", f, m[0])
			dots++
		}
	}
	assert.NotZero(t, dots, "the dot tests")
	assert.Equal(t, fmt.Sprintf("local TOKEN, RANK, MAX_INSPECTED, MAX_FREE_HINT, READER, UNRANKED = %d, %d, %d, %d, %d, %d\n",
		layout.TokenLen, layout.RankLen, keyserver.MaxInspected, layout.MaxFreeHint, readerMark, primWatch[0]), luaConstants)
}

// Tokens for TestLuaScripts: ranked ones, in the order of their ranks,
// and one without a rank.
const (
	luaEarly    = "0000019a2b3c4d00.00000000000000000000000000000001"
	luaHolder   = "0000019a2b3c4d01.00000001000000000000000000000001"
	luaCaller   = "0000019a2b3c4d02.00000002000000000000000000000001"
	luaWaiter   = "0000019a2b3c4d03.00000003000000000000000000000001"
	luaUnranked = "t1"
	luaChannel  = "ch" // the channel of the members in lines and watchers
)

// luaCase is one run of one script, whole, in TestLuaScripts.
type luaCase struct {
	file  string
	name  string
	setup [][]any // commands run first
	keys  []string
	args  []string
	want  any                       // the reply, bulk strings as string and TTLs as about; a string is an error reply's first word
	check func(luaNode, *testing.T) // the effect
	told  []string                  // the messages published on luaChannel, in order
}

// luaNode is the Redis of TestLuaScripts.
type luaNode struct {
	*redistest.Node
	start time.Time // when the test began: before any key was set up
}

// near reports whether left, a TTL read now of one set to ms, is right:
// at most ms, and at least ms less the time since the test began (plus a
// millisecond of rounding), however long the machine stalled the test.
func (n luaNode) near(left, ms int64) bool {
	return left <= ms && left >= ms-time.Since(n.start).Milliseconds()-1
}

// str is cmd's reply as a string ("" for nil).
func (n luaNode) str(cmd string, args ...any) string {
	s, _ := redigo.String(n.MustDo(cmd, args...), nil)
	return s
}

// pttlNear checks that key's PTTL is in (ms-1000, ms].
func (n luaNode) pttlNear(t *testing.T, key string, ms int64) {
	t.Helper()
	left := n.MustDo("PTTL", key).(int64)
	assert.True(t, n.near(left, ms), "PTTL %s is %d, want about %d", key, left, ms)
}

// heldNear checks that sem:held records slot as lapsing in about ms.
func (n luaNode) heldNear(t *testing.T, sem, slot string, ms int64) {
	t.Helper()
	score, err := redigo.Int64(n.Do("ZSCORE", sem+":held", slot))
	require.NoError(t, err, "slot %s in %s:held", slot, sem)
	left := score - time.Now().UnixMilli()
	assert.True(t, n.near(left, ms), "slot %s lapses in %d ms, want about %d", slot, left, ms)
}

// about stands in a want for a TTL left of about so many milliseconds
// (luaNode.near).
type about int64

// matchReply checks reply against want, which may hold abouts.
func (n luaNode) matchReply(t *testing.T, want, reply any) {
	t.Helper()
	w, ok := want.([]any)
	if !ok {
		assert.Equal(t, want, reply)
		return
	}
	r, ok := reply.([]any)
	if !assert.True(t, ok && len(r) == len(w), "reply %v, want %v", reply, want) {
		return
	}
	for i := range w {
		if ms, ok := w[i].(about); ok {
			left, _ := r[i].(int64)
			assert.True(t, n.near(left, int64(ms)), "reply %v: [%d] is %v, want about %d", reply, i, r[i], ms)
		} else {
			assert.Equal(t, w[i], r[i], "reply %v: [%d]", reply, i)
		}
	}
}

// plain turns redigo's reply into strings and int64s, for comparing.
func plain(r any) any {
	switch v := r.(type) {
	case []byte:
		return string(v)
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = plain(e)
		}
		return out
	}
	return r
}

// TestLuaScripts runs every script, as the Server sends it (after the
// prelude it calls), against a real Redis: each case sets keys up, EVALs the file's text with KEYS and ARGV
// as the Server passes them, and checks the reply, the keys after it and
// what it published.
func TestLuaScripts(t *testing.T) {
	n := luaNode{Node: redistest.Start(t, 1).Nodes[0]}
	ps := redigo.PubSubConn{Conn: dial(t, n)}
	defer ps.Close()
	require.NoError(t, ps.Subscribe(luaChannel))
	_, ok := ps.Receive().(redigo.Subscription)
	require.True(t, ok, "subscribed")

	const k, line, fence = "{k}", "{k}:line", "{k}:fence"
	const k2, line2 = "{k}2", "{k}2:line"
	holderP, callerP, waiterP := keyserver.PromiseOf(luaHolder), keyserver.PromiseOf(luaCaller), keyserver.PromiseOf(luaWaiter)
	callerM, waiterM := callerP+luaChannel, waiterP+luaChannel
	earlyM := keyserver.PromiseOf(luaEarly) + luaChannel
	ttl := "5000"
	lineTTL := strconv.FormatInt(keyserver.LineTTL.Milliseconds(), 10)
	claim := strconv.FormatInt(layout.ClaimTTL.Milliseconds(), 10)
	reader := watchPromise(luaHolder, true) // the earliest watcher
	const sem, rw, el = "{s}", "{rw}", "{e}"
	rwK := rwKeys(rw)
	semK := []string{sem, sem + ":1", sem + ":watchers", sem + ":told"}
	relK := []string{sem + ":1", sem + ":watchers", sem + ":told"}
	holdK := []string{rw + ":w", rw + ":r", rw + ":watchers", rw + ":told"}
	now := time.Now().UnixMilli() // for the watchers' scores and the promises' deadlines: the test and Redis share a clock
	n.start = time.UnixMilli(now)
	// live is how long after now a promise set up as live stays so: every
	// case runs within it, on a loaded machine too (300 ms was seen to
	// lapse before the last cases ran).
	const live = 3000
	// promiseOf is one promise of a semaphore's key:told.
	promiseOf := func(promise string, deadline int64) string {
		return promise + " " + strconv.FormatInt(deadline, 10) + ","
	}
	named := keyserver.NameKeys{Lock: k, Semaphore: layout.SemaphoreKey(k), RW: layout.RWKey(k), Election: layout.ElectionKey(k)}

	cases := []luaCase{
		{file: "acquire.lua", name: "free key", keys: []string{k}, args: []string{luaCaller, ttl, callerP}, want: int64(1),
			check: func(n luaNode, t *testing.T) {
				assert.Equal(t, luaCaller, n.str("GET", k))
				n.pttlNear(t, k, 5000)
			}},
		{file: "acquire.lua", name: "held by another", setup: [][]any{{"SET", k, luaHolder, "PX", 9000}},
			keys: []string{k}, args: []string{luaCaller, ttl, callerP}, want: int64(0),
			check: func(n luaNode, t *testing.T) {
				assert.Equal(t, luaHolder, n.str("GET", k))
				n.pttlNear(t, k, 9000)
			}},
		{file: "acquire.lua", name: "extends, keeping the mark", setup: [][]any{{"SET", k, luaCaller + "+", "PX", 100}},
			keys: []string{k}, args: []string{luaCaller, ttl, callerP}, want: int64(1),
			check: func(n luaNode, t *testing.T) {
				assert.Equal(t, luaCaller+"+", n.str("GET", k))
				n.pttlNear(t, k, 5000)
			}},
		{file: "acquire.lua", name: "claims its promise", setup: [][]any{{"SET", k, callerP, "PX", 100}},
			keys: []string{k}, args: []string{luaCaller, ttl, callerP}, want: int64(1),
			check: func(n luaNode, t *testing.T) { assert.Equal(t, luaCaller+"+", n.str("GET", k)) }},
		{file: "acquire.lua", name: "WRONGTYPE, nothing written", setup: [][]any{{"HSET", k, "f", "v"}},
			keys: []string{k}, args: []string{luaCaller, ttl, callerP}, want: "WRONGTYPE",
			check: func(n luaNode, t *testing.T) { assert.Equal(t, "hash", n.str("TYPE", k)) }},

		{file: "acquire_all.lua", name: "one key: free key", keys: []string{k}, args: []string{luaCaller, ttl, callerP}, want: int64(1),
			check: func(n luaNode, t *testing.T) { assert.Equal(t, luaCaller, n.str("GET", k)) }},
		{file: "acquire_all.lua", name: "one key: ranked holder first", setup: [][]any{{"SET", k, luaHolder + "+", "PX", 9000}},
			keys: []string{k}, args: []string{luaCaller, ttl, callerP}, want: []any{about(9000), int64(-1), int64(0)},
			check: func(n luaNode, t *testing.T) { assert.Equal(t, luaHolder+"+", n.str("GET", k)) }},
		{file: "acquire_all.lua", name: "one key: unranked holder without TTL", setup: [][]any{{"SET", k, luaUnranked}},
			keys: []string{k}, args: []string{luaHolder, ttl, holderP}, want: []any{int64(0), int64(0), int64(0)}},
		{file: "acquire_all.lua", name: "one key: caller first", setup: [][]any{{"SET", k, luaCaller, "PX", 9000}},
			keys: []string{k}, args: []string{luaHolder, ttl, holderP}, want: []any{about(9000), int64(1), int64(0)}},

		{file: "acquire_in_line.lua", name: "refused: in line, holder marked",
			setup: [][]any{{"SET", k, luaHolder, "PX", 9000}, {"ZADD", line, 0, earlyM, 0, waiterM}},
			keys:  []string{k, line}, args: []string{luaCaller, ttl, callerP, lineTTL, callerM, ""},
			want: []any{about(9000), int64(-1), int64(1)},
			check: func(n luaNode, t *testing.T) {
				assert.Equal(t, luaHolder+"+", n.str("GET", k), "marked, KEEPTTL")
				n.pttlNear(t, k, 9000)
				assert.Equal(t, []any{earlyM, callerM, waiterM}, plain(n.MustDo("ZRANGE", line, 0, -1)), "in line by rank")
				n.pttlNear(t, line, keyserver.LineTTL.Milliseconds())
			}},
		{file: "acquire_in_line.lua", name: "granted: out of line, stored marked",
			setup: [][]any{{"ZADD", line, 0, callerM}},
			keys:  []string{k, line}, args: []string{luaCaller, ttl, callerP, lineTTL, callerM, ""}, want: int64(1),
			check: func(n luaNode, t *testing.T) {
				assert.Equal(t, luaCaller+"+", n.str("GET", k))
				assert.Equal(t, int64(0), n.MustDo("EXISTS", line))
			}},
		{file: "acquire_in_line.lua", name: "claims its promise, next joins",
			setup: [][]any{{"SET", k, callerP, "PX", 100}},
			keys:  []string{k, line}, args: []string{luaCaller, ttl, callerP, lineTTL, callerM, waiterM}, want: int64(1),
			check: func(n luaNode, t *testing.T) {
				assert.Equal(t, luaCaller+"+", n.str("GET", k))
				assert.Equal(t, []any{waiterM}, plain(n.MustDo("ZRANGE", line, 0, -1)))
			}},

		{file: "release.lua", name: "unmarked: deleted", setup: [][]any{{"SET", k, luaCaller, "PX", 9000}, {"ZADD", line, 0, waiterM}},
			keys: []string{k, line}, args: []string{luaCaller, claim}, want: int64(1),
			check: func(n luaNode, t *testing.T) {
				assert.Equal(t, int64(0), n.MustDo("EXISTS", k))
				assert.Equal(t, int64(1), n.MustDo("ZCARD", line), "the line is not looked at")
			}},
		{file: "release.lua", name: "wrong token", setup: [][]any{{"SET", k, luaHolder, "PX", 9000}},
			keys: []string{k, line}, args: []string{luaCaller, claim}, want: int64(0),
			check: func(n luaNode, t *testing.T) { assert.Equal(t, luaHolder, n.str("GET", k)) }},
		{file: "release.lua", name: "a promise is not given away", setup: [][]any{{"SET", k, callerP, "PX", 9000}},
			keys: []string{k, line}, args: []string{luaCaller, claim}, want: int64(0),
			check: func(n luaNode, t *testing.T) { assert.Equal(t, callerP, n.str("GET", k)) }},
		{file: "release.lua", name: "marked: handed over", setup: [][]any{{"SET", k, luaCaller + "+", "PX", 9000}, {"ZADD", line, 0, waiterM}},
			keys: []string{k, line}, args: []string{luaCaller, claim}, want: int64(1),
			check: func(n luaNode, t *testing.T) {
				assert.Equal(t, waiterP, n.str("GET", k))
				n.pttlNear(t, k, layout.ClaimTTL.Milliseconds())
				assert.Equal(t, int64(0), n.MustDo("EXISTS", line))
			},
			told: []string{waiterP + k}},
		{file: "release.lua", name: "unranked, nobody in line: deleted", setup: [][]any{{"SET", k, luaUnranked, "PX", 9000}},
			keys: []string{k, line}, args: []string{luaUnranked, claim}, want: int64(1),
			check: func(n luaNode, t *testing.T) { assert.Equal(t, int64(0), n.MustDo("EXISTS", k)) }},

		{file: "release_in_line.lua", name: "first in line: promised to itself", setup: [][]any{{"SET", k, luaCaller, "PX", 9000}, {"ZADD", line, 0, waiterM}},
			keys: []string{k, line}, args: []string{luaCaller, claim, callerM, lineTTL}, want: int64(1),
			check: func(n luaNode, t *testing.T) {
				assert.Equal(t, callerP, n.str("GET", k))
				n.pttlNear(t, k, layout.ClaimTTL.Milliseconds())
				assert.Equal(t, []any{waiterM}, plain(n.MustDo("ZRANGE", line, 0, -1)), "the waiter behind it waits on")
			},
			told: []string{callerP + k}},
		{file: "release_in_line.lua", name: "an earlier waiter: handed over, back in line", setup: [][]any{{"SET", k, luaCaller + "+", "PX", 9000}, {"ZADD", line, 0, earlyM}},
			keys: []string{k, line}, args: []string{luaCaller, claim, callerM, lineTTL}, want: int64(1),
			check: func(n luaNode, t *testing.T) {
				assert.Equal(t, keyserver.PromiseOf(luaEarly), n.str("GET", k))
				assert.Equal(t, []any{callerM}, plain(n.MustDo("ZRANGE", line, 0, -1)))
				n.pttlNear(t, line, keyserver.LineTTL.Milliseconds())
			},
			told: []string{keyserver.PromiseOf(luaEarly) + k}},
		{file: "release_in_line.lua", name: "nobody in line: deleted, in no line", setup: [][]any{{"SET", k, luaCaller + "+", "PX", 9000}},
			keys: []string{k, line}, args: []string{luaCaller, claim, callerM, lineTTL}, want: int64(1),
			check: func(n luaNode, t *testing.T) {
				assert.Equal(t, int64(0), n.MustDo("EXISTS", k))
				assert.Equal(t, int64(0), n.MustDo("EXISTS", line))
			}},
		{file: "release_in_line.lua", name: "wrong token: nothing joins", setup: [][]any{{"SET", k, luaHolder, "PX", 9000}},
			keys: []string{k, line}, args: []string{luaCaller, claim, callerM, lineTTL}, want: int64(0),
			check: func(n luaNode, t *testing.T) {
				assert.Equal(t, luaHolder, n.str("GET", k))
				assert.Equal(t, int64(0), n.MustDo("EXISTS", line))
			}},

		{file: "acquire_all.lua", name: "all free", setup: [][]any{{"SET", k2, luaCaller + "+", "PX", 9000}},
			keys: []string{k, k2}, args: []string{luaCaller, ttl, callerP}, want: int64(1),
			check: func(n luaNode, t *testing.T) {
				assert.Equal(t, luaCaller, n.str("GET", k))
				assert.Equal(t, luaCaller+"+", n.str("GET", k2), "the waiters' mark is kept")
				n.pttlNear(t, k, 5000)
				n.pttlNear(t, k2, 5000)
			}},
		{file: "acquire_all.lua", name: "one held by another: none taken", setup: [][]any{{"SET", k2, luaHolder, "PX", 9000}},
			keys: []string{k, k2}, args: []string{luaCaller, ttl, callerP}, want: []any{about(9000), int64(-1), int64(0)},
			check: func(n luaNode, t *testing.T) {
				assert.Equal(t, int64(0), n.MustDo("EXISTS", k), "all or nothing")
				assert.Equal(t, luaHolder, n.str("GET", k2))
			}},
		{file: "acquire_all.lua", name: "the caller's keys renewed, a free one taken", setup: [][]any{{"SET", k, luaCaller, "PX", 100}},
			keys: []string{k, k2}, args: []string{luaCaller, ttl, callerP}, want: int64(1),
			check: func(n luaNode, t *testing.T) {
				assert.Equal(t, luaCaller, n.str("GET", k))
				n.pttlNear(t, k, 5000)
				assert.Equal(t, luaCaller, n.str("GET", k2))
			}},
		{file: "acquire_all.lua", name: "held by another after the caller's own: nothing changed", setup: [][]any{{"SET", k, luaCaller, "PX", 3000}, {"SET", k2, luaHolder, "PX", 9000}},
			keys: []string{k, k2}, args: []string{luaCaller, ttl, callerP}, want: []any{about(9000), int64(-1), int64(0)},
			check: func(n luaNode, t *testing.T) {
				assert.Equal(t, luaCaller, n.str("GET", k), "the caller's own key is not deleted")
				n.pttlNear(t, k, 3000)
			}},
		{file: "acquire_all.lua", name: "a promise to the caller is claimed", setup: [][]any{{"SET", k, callerP, "PX", 500}},
			keys: []string{k, k2}, args: []string{luaCaller, ttl, callerP}, want: int64(1),
			check: func(n luaNode, t *testing.T) {
				assert.Equal(t, luaCaller+"+", n.str("GET", k))
				assert.Equal(t, luaCaller, n.str("GET", k2))
			}},
		{file: "acquire_all.lua", name: "a promise to another", setup: [][]any{{"SET", k2, waiterP, "PX", 500}},
			keys: []string{k, k2}, args: []string{luaCaller, ttl, callerP}, want: []any{about(500), int64(1), int64(0)},
			check: func(n luaNode, t *testing.T) { assert.Equal(t, int64(0), n.MustDo("EXISTS", k)) }},
		{file: "release_all.lua", name: "each key deleted or handed over", setup: [][]any{{"SET", k, luaCaller, "PX", 9000},
			{"SET", k2, luaCaller + "+", "PX", 9000}, {"ZADD", line2, 0, waiterM}},
			keys: []string{k, line, k2, line2}, args: []string{luaCaller, claim}, want: int64(2),
			check: func(n luaNode, t *testing.T) {
				assert.Equal(t, int64(0), n.MustDo("EXISTS", k))
				assert.Equal(t, waiterP, n.str("GET", k2))
			},
			told: []string{waiterP + k2}},
		{file: "release_all.lua", name: "every key plain: all deleted", setup: [][]any{{"SET", k, luaCaller, "PX", 9000}, {"SET", k2, luaCaller, "PX", 9000}},
			keys: []string{k, line, k2, line2}, args: []string{luaCaller, claim}, want: int64(2),
			check: func(n luaNode, t *testing.T) { assert.Equal(t, int64(0), n.MustDo("EXISTS", k, k2)) }},
		{file: "release_all.lua", name: "another's key is left alone", setup: [][]any{{"SET", k, luaCaller, "PX", 9000}, {"SET", k2, luaHolder, "PX", 9000}},
			keys: []string{k, line, k2, line2}, args: []string{luaCaller, claim}, want: int64(1),
			check: func(n luaNode, t *testing.T) { assert.Equal(t, luaHolder, n.str("GET", k2)) }},

		{file: "acquire_all_in_line.lua", name: "granted: stored marked, out of every line",
			setup: [][]any{{"SET", k, callerP, "PX", 3000}, {"ZADD", line2, 0, callerM, 0, waiterM}},
			keys:  []string{k, line, k2, line2}, args: []string{luaCaller, ttl, callerP, callerM, lineTTL, claim}, want: int64(1),
			check: func(n luaNode, t *testing.T) {
				assert.Equal(t, luaCaller+"+", n.str("GET", k), "its promise claimed")
				assert.Equal(t, luaCaller+"+", n.str("GET", k2), "marked: the waiter behind it is told at release")
				n.pttlNear(t, k2, 5000)
				assert.Equal(t, []any{waiterM}, plain(n.MustDo("ZRANGE", line2, 0, -1)))
			}},
		{file: "acquire_all_in_line.lua", name: "refused: nothing stored, in the line of each held key, holder marked, promise kept",
			setup: [][]any{{"SET", k, luaHolder, "PX", 9000}, {"ZADD", line, 0, earlyM}, {"SET", k2, callerP, "PX", 400}},
			keys:  []string{"{k}0", "{k}0:line", k, line, k2, line2}, args: []string{luaCaller, ttl, callerP, callerM, lineTTL, claim},
			want: []any{about(9000), int64(-1), int64(1), "001"},
			check: func(n luaNode, t *testing.T) {
				assert.Equal(t, int64(0), n.MustDo("EXISTS", "{k}0", "{k}0:line"), "a free key: not taken, no line")
				assert.Equal(t, luaHolder+"+", n.str("GET", k), "marked, KEEPTTL")
				n.pttlNear(t, k, 9000)
				assert.Equal(t, []any{earlyM, callerM}, plain(n.MustDo("ZRANGE", line, 0, -1)))
				assert.Equal(t, callerP, n.str("GET", k2), "its promise kept")
				n.pttlNear(t, k2, keyserver.LineTTL.Milliseconds())
				assert.Equal(t, int64(0), n.MustDo("EXISTS", line2), "not in the line of its promise")
			}},
		{file: "acquire_all_in_line.lua", name: "a later rank's promise taken over: granted",
			setup: [][]any{{"SET", k, callerP, "PX", 400}, {"SET", k2, waiterP, "PX", 400}},
			keys:  []string{k, line, k2, line2}, args: []string{luaCaller, ttl, callerP, callerM, lineTTL, claim}, want: int64(1),
			check: func(n luaNode, t *testing.T) {
				assert.Equal(t, luaCaller+"+", n.str("GET", k))
				assert.Equal(t, luaCaller+"+", n.str("GET", k2))
				n.pttlNear(t, k2, 5000)
			}},
		{file: "acquire_all_in_line.lua", name: "a later rank's promise taken over and kept, refused by a held key",
			setup: [][]any{{"SET", k, luaHolder, "PX", 9000}, {"SET", k2, waiterP, "PX", 400}},
			keys:  []string{k, line, k2, line2}, args: []string{luaCaller, ttl, callerP, callerM, lineTTL, claim},
			want: []any{about(9000), int64(-1), int64(0), "01"},
			check: func(n luaNode, t *testing.T) {
				assert.Equal(t, callerP, n.str("GET", k2), "now promised to the caller")
				n.pttlNear(t, k2, keyserver.LineTTL.Milliseconds())
				assert.Equal(t, []any{callerM}, plain(n.MustDo("ZRANGE", line, 0, -1)))
			}},
		{file: "acquire_all_in_line.lua", name: "refused by an earlier rank's promise: its own given up",
			setup: [][]any{{"SET", k, callerP, "PX", 400}, {"ZADD", line, 0, earlyM, 0, waiterM}, {"SET", k2, holderP, "PX", 400},
				{"SET", "{k}3", callerP, "PX", 400}, {"ZADD", "{k}3:line", 0, waiterM}},
			keys: []string{k, line, k2, line2, "{k}3", "{k}3:line"}, args: []string{luaCaller, ttl, callerP, callerM, lineTTL, claim},
			want: []any{about(400), int64(-1), int64(0), "001"},
			check: func(n luaNode, t *testing.T) {
				earlyP := keyserver.PromiseOf(luaEarly)
				assert.Equal(t, earlyP, n.str("GET", k), "handed over to the earlier first of its line")
				n.pttlNear(t, k, layout.ClaimTTL.Milliseconds())
				assert.Equal(t, []any{callerM, waiterM}, plain(n.MustDo("ZRANGE", line, 0, -1)), "the caller waits there again")
				assert.Equal(t, []any{callerM}, plain(n.MustDo("ZRANGE", line2, 0, -1)))
				assert.Equal(t, callerP, n.str("GET", "{k}3"), "only a later rank waits for it: kept")
				n.pttlNear(t, "{k}3", keyserver.LineTTL.Milliseconds())
			},
			told: []string{keyserver.PromiseOf(luaEarly) + k}},
		{file: "leave_lines.lua", name: "out of a line, a promise handed over",
			setup: [][]any{{"SET", k, luaHolder, "PX", 9000}, {"ZADD", line, 0, callerM}, {"SET", k2, callerP, "PX", 400}, {"ZADD", line2, 0, waiterM}},
			keys:  []string{k, line, k2, line2}, args: []string{callerM, callerP, claim}, want: int64(1),
			check: func(n luaNode, t *testing.T) {
				assert.Equal(t, luaHolder, n.str("GET", k))
				assert.Equal(t, int64(0), n.MustDo("EXISTS", line))
				assert.Equal(t, waiterP, n.str("GET", k2))
			},
			told: []string{waiterP + k2}},

		{file: "leave_lines.lua", name: "one key: in line", setup: [][]any{{"SET", k, luaHolder, "PX", 9000}, {"ZADD", line, 0, callerM}},
			keys: []string{k, line}, args: []string{callerM, callerP, claim}, want: int64(1),
			check: func(n luaNode, t *testing.T) {
				assert.Equal(t, luaHolder, n.str("GET", k))
				assert.Equal(t, int64(0), n.MustDo("EXISTS", line))
			}},
		{file: "leave_lines.lua", name: "one key: promised: handed over", setup: [][]any{{"SET", k, callerP, "PX", 400}, {"ZADD", line, 0, waiterM}},
			keys: []string{k, line}, args: []string{callerM, callerP, claim}, want: int64(1),
			check: func(n luaNode, t *testing.T) { assert.Equal(t, waiterP, n.str("GET", k)) },
			told:  []string{waiterP + k}},

		{file: "acquire.lua", name: "fenced: granted", setup: [][]any{{"SET", fence, 7}},
			keys: []string{k, fence}, args: []string{luaCaller, ttl, callerP}, want: int64(15),
			check: func(n luaNode, t *testing.T) { assert.Equal(t, luaCaller, n.str("GET", k)) }},
		{file: "acquire.lua", name: "fenced: refused, no counter", setup: [][]any{{"SET", k, luaHolder, "PX", 9000}},
			keys: []string{k, fence}, args: []string{luaCaller, ttl, callerP}, want: int64(0)},

		{file: "raise_fence.lua", name: "raised", setup: [][]any{{"SET", fence, 3}},
			keys: []string{fence}, args: []string{"5"}, want: int64(3),
			check: func(n luaNode, t *testing.T) {
				assert.Equal(t, "5", n.str("GET", fence))
				assert.Equal(t, int64(-1), n.MustDo("PTTL", fence), "no TTL")
			}},
		{file: "raise_fence.lua", name: "never lowered", setup: [][]any{{"SET", fence, 9}},
			keys: []string{fence}, args: []string{"5"}, want: int64(9),
			check: func(n luaNode, t *testing.T) { assert.Equal(t, "9", n.str("GET", fence)) }},

		{file: "acquire_permit.lua", name: "granted", setup: [][]any{{"ZADD", sem + ":watchers", now, callerM}},
			keys: semK, args: []string{"3", "1", luaCaller, ttl, "32", callerM, callerP}, want: []any{int64(1), int64(0)},
			check: func(n luaNode, t *testing.T) {
				assert.Equal(t, "3", n.str("GET", sem))
				n.pttlNear(t, sem, 5000)
				assert.Equal(t, luaCaller, n.str("GET", sem+":1"))
				assert.Equal(t, int64(0), n.MustDo("EXISTS", sem+":watchers"), "unwatched")
				assert.Equal(t, int64(0), n.MustDo("EXISTS", sem+":held"), "a slot below 1024 is not recorded")
			}},
		{file: "acquire_permit.lua", name: "refused: free slots listed", setup: [][]any{{"SET", sem, 3, "PX", 9000}, {"SET", sem + ":1", luaHolder, "PX", 9000}},
			keys: semK, args: []string{"3", "1", luaCaller, ttl, "32", "", callerP}, want: []any{int64(0), about(9000), int64(0), int64(2)}},
		{file: "acquire_permit.lua", name: "count differs", setup: [][]any{{"SET", sem, 2, "PX", 9000}, {"SET", sem + ":0", luaHolder, "PX", 9000}},
			keys: semK, args: []string{"3", "1", luaCaller, ttl, "32", "", callerP}, want: []any{int64(-1), int64(2)},
			check: func(n luaNode, t *testing.T) { assert.Equal(t, int64(0), n.MustDo("EXISTS", sem+":1")) }},
		{file: "acquire_permit.lua", name: "the free slot is promised to another: refused, none listed",
			setup: [][]any{{"SET", sem, 2, "PX", 9000}, {"SET", sem + ":0", luaHolder, "PX", 9000}, {"SET", sem + ":told", promiseOf(waiterM, now+live+100), "PX", 3000}},
			keys:  semK, args: []string{"2", "1", luaCaller, ttl, "32", "", callerP}, want: []any{int64(0), about(live + 100)},
			check: func(n luaNode, t *testing.T) {
				assert.Equal(t, int64(0), n.MustDo("EXISTS", sem+":1"), "the slot is kept")
				assert.Equal(t, promiseOf(waiterM, now+live+100), n.str("GET", sem+":told"))
			}},
		{file: "acquire_permit.lua", name: "a slot beside the promised one: granted",
			setup: [][]any{{"SET", sem, 2, "PX", 9000}, {"SET", sem + ":told", promiseOf(waiterM, now+live+100), "PX", 3000}},
			keys:  semK, args: []string{"2", "1", luaCaller, ttl, "32", "", callerP}, want: []any{int64(1), int64(0)},
			check: func(n luaNode, t *testing.T) {
				assert.Equal(t, luaCaller, n.str("GET", sem+":1"))
				assert.Equal(t, promiseOf(waiterM, now+live+100), n.str("GET", sem+":told"), "the other's promise stands")
			}},
		{file: "acquire_permit.lua", name: "two promised, the caller's claimed: the other's stays",
			setup: [][]any{{"SET", sem, 2, "PX", 9000}, {"SET", sem + ":told", promiseOf(waiterM, now+live+100) + promiseOf(callerM, now+live+150), "PX", 3000},
				{"ZADD", sem + ":watchers", now, callerM, now, waiterM}},
			keys: semK, args: []string{"2", "1", luaCaller, ttl, "32", callerM, callerP}, want: []any{int64(1), int64(0)},
			check: func(n luaNode, t *testing.T) {
				assert.Equal(t, luaCaller, n.str("GET", sem+":1"))
				assert.Equal(t, promiseOf(waiterM, now+live+100), n.str("GET", sem+":told"))
				n.pttlNear(t, sem+":told", 3000)
				assert.Equal(t, []any{waiterM}, plain(n.MustDo("ZRANGE", sem+":watchers", 0, -1)), "unwatched")
			}},
		{file: "acquire_permit.lua", name: "its promise, asking a held slot: refused, free slots listed",
			setup: [][]any{{"SET", sem, 2, "PX", 9000}, {"SET", sem + ":1", luaHolder, "PX", 9000}, {"SET", sem + ":told", promiseOf(callerM, now+live+100), "PX", 3000}},
			keys:  semK, args: []string{"2", "1", luaCaller, ttl, "32", "", callerP}, want: []any{int64(0), about(9000), int64(0)},
			check: func(n luaNode, t *testing.T) {
				assert.Equal(t, promiseOf(callerM, now+live+100), n.str("GET", sem+":told"), "kept")
			}},
		{file: "acquire_permit.lua", name: "a lapsed promise keeps nothing, its watcher taken out",
			setup: [][]any{{"SET", sem, 2, "PX", 9000}, {"SET", sem + ":told", promiseOf(waiterM, now-10), "PX", 3000}, {"ZADD", sem + ":watchers", now, waiterM}},
			keys:  semK, args: []string{"2", "1", luaCaller, ttl, "32", "", callerP}, want: []any{int64(1), int64(0)},
			check: func(n luaNode, t *testing.T) {
				assert.Equal(t, int64(0), n.MustDo("EXISTS", sem+":watchers", sem+":told"))
			}},

		{file: "extend_permit.lua", name: "stored again, count slot+1", keys: []string{sem, sem + ":2"}, args: []string{"2", luaCaller, ttl}, want: int64(1),
			check: func(n luaNode, t *testing.T) {
				assert.Equal(t, luaCaller, n.str("GET", sem+":2"))
				assert.Equal(t, "3", n.str("GET", sem))
				assert.Equal(t, int64(0), n.MustDo("EXISTS", sem+":held"), "a slot below 1024 is not recorded")
			}},
		{file: "extend_permit.lua", name: "held by another", setup: [][]any{{"SET", sem + ":2", luaHolder, "PX", 9000}},
			keys: []string{sem, sem + ":2"}, args: []string{"2", luaCaller, ttl}, want: int64(0)},

		{file: "release_permit.lua", name: "released: the earliest watcher promised and told, and kept",
			setup: [][]any{{"SET", sem + ":1", luaHolder, "PX", 9000}, {"ZADD", sem + ":watchers", 2, earlyM, 1, waiterM}},
			keys:  relK, args: []string{luaHolder, lineTTL, claim, "", "", sem}, want: int64(1),
			check: func(n luaNode, t *testing.T) {
				assert.Equal(t, int64(0), n.MustDo("EXISTS", sem+":1"))
				assert.Equal(t, []any{waiterM, earlyM}, plain(n.MustDo("ZRANGE", sem+":watchers", 0, -1)), "in the order they came")
				promise := n.str("GET", sem+":told")
				if assert.True(t, strings.HasPrefix(promise, waiterM+" "), "promised: %q", promise) {
					at, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimPrefix(promise, waiterM+" "), ","), 10, 64)
					assert.InDelta(t, time.Now().UnixMilli()+layout.ClaimTTL.Milliseconds(), at, 1000, "deadline, server time")
				}
				n.pttlNear(t, sem+":told", keyserver.LineTTL.Milliseconds())
			},
			told: []string{waiterP + sem}},
		{file: "release_permit.lua", name: "a watcher promised a slot already is passed over, one whose promise lapsed taken out",
			setup: [][]any{{"SET", sem + ":1", luaHolder, "PX", 9000}, {"ZADD", sem + ":watchers", 1, earlyM, 2, callerM, 3, waiterM},
				{"SET", sem + ":told", promiseOf(callerM, now+live) + promiseOf(earlyM, now-5), "PX", 3000}},
			keys: relK, args: []string{luaHolder, lineTTL, claim, "", "", sem}, want: int64(1),
			check: func(n luaNode, t *testing.T) {
				promise := n.str("GET", sem+":told")
				assert.True(t, strings.HasPrefix(promise, promiseOf(callerM, now+live)+waiterM+" "), "the lapsed promise dropped, the waiter's added: %q", promise)
				assert.Equal(t, []any{callerM, waiterM}, plain(n.MustDo("ZRANGE", sem+":watchers", 0, -1)))
			},
			told: []string{waiterP + sem}},
		{file: "release_permit.lua", name: "no rank: told and taken out, not promised",
			setup: [][]any{{"SET", sem + ":1", luaHolder, "PX", 9000}, {"ZADD", sem + ":watchers", now, primWatch + luaChannel}},
			keys:  relK, args: []string{luaHolder, lineTTL, claim, "", "", sem}, want: int64(1),
			check: func(n luaNode, t *testing.T) {
				assert.Equal(t, int64(0), n.MustDo("EXISTS", sem+":told", sem+":watchers"))
			},
			told: []string{primWatch + sem}},
		{file: "release_permit.lua", name: "a waiter's give-back: back among the watchers in its place, and promised the slot",
			setup: [][]any{{"SET", sem + ":1", luaCaller, "PX", 9000}, {"ZADD", sem + ":watchers", 2, waiterM}},
			keys:  relK, args: []string{luaCaller, lineTTL, claim, callerM, "1", sem}, want: int64(1),
			check: func(n luaNode, t *testing.T) {
				assert.Equal(t, []any{callerM, waiterM}, plain(n.MustDo("ZRANGE", sem+":watchers", 0, -1)))
				assert.True(t, strings.HasPrefix(n.str("GET", sem+":told"), callerM+" "), "promised to the giver")
				n.pttlNear(t, sem+":watchers", keyserver.LineTTL.Milliseconds())
			},
			told: []string{callerP + sem}},
		{file: "release_permit.lua", name: "a give-back of a slot no longer held: back among the watchers, nobody promised",
			setup: [][]any{{"ZADD", sem + ":watchers", 2, waiterM}},
			keys:  relK, args: []string{luaCaller, lineTTL, claim, callerM, "1", sem}, want: int64(0),
			check: func(n luaNode, t *testing.T) {
				assert.Equal(t, []any{callerM, waiterM}, plain(n.MustDo("ZRANGE", sem+":watchers", 0, -1)))
				assert.Equal(t, int64(0), n.MustDo("EXISTS", sem+":told"))
			}},
		{file: "release_permit.lua", name: "wrong token", setup: [][]any{{"SET", sem + ":1", luaHolder, "PX", 9000}, {"ZADD", sem + ":watchers", now, callerM}},
			keys: relK, args: []string{luaCaller, lineTTL, claim, "", "", sem}, want: int64(0)},

		{file: "acquire_read.lua", name: "granted", keys: rwK, args: []string{luaCaller, ttl, ""}, want: []any{int64(1), int64(0)},
			check: func(n luaNode, t *testing.T) {
				now := time.Now().UnixMilli()
				at, err := redigo.Int64(n.MustDo("ZSCORE", rw+":r", luaCaller), nil)
				require.NoError(t, err)
				assert.InDelta(t, now+5000, at, 1000, "expiry, server time")
				n.pttlNear(t, rw+":r", 5000)
			}},
		{file: "acquire_read.lua", name: "a writer waits", setup: [][]any{{"SET", rw + ":wait", "w", "PX", 900}},
			keys: rwK, args: []string{luaCaller, ttl, ""}, want: []any{int64(0), about(900)},
			check: func(n luaNode, t *testing.T) { assert.Equal(t, int64(0), n.MustDo("EXISTS", rw+":r")) }},
		{file: "acquire_read.lua", name: "a writer is promised the lock", setup: [][]any{{"SET", rw + ":told", promiseOf(waiterM, now+live+100), "PX", 3000}},
			keys: rwK, args: []string{luaCaller, ttl, ""}, want: []any{int64(0), about(live + 100)},
			check: func(n luaNode, t *testing.T) { assert.Equal(t, int64(0), n.MustDo("EXISTS", rw+":r")) }},
		{file: "acquire_read.lua", name: "a lapsed promise keeps nobody out", setup: [][]any{{"SET", rw + ":told", promiseOf(waiterM, now-10), "PX", 3000}},
			keys: rwK, args: []string{luaCaller, ttl, ""}, want: []any{int64(1), int64(0)}},

		{file: "acquire_write.lua", name: "granted", keys: rwK, args: []string{luaCaller, ttl, "1", "m", "1000", "", callerP}, want: []any{int64(1), int64(0)},
			check: func(n luaNode, t *testing.T) { assert.Equal(t, luaCaller, n.str("GET", rw+":w")) }},
		{file: "acquire_write.lua", name: "a reader holds: marked waiting", setup: [][]any{{"ZADD", rw + ":r", time.Now().UnixMilli() + 9000, luaHolder}},
			keys: rwK, args: []string{luaCaller, ttl, "1", "m", "1000", "", callerP}, want: []any{int64(0), about(9000)},
			check: func(n luaNode, t *testing.T) {
				assert.Equal(t, int64(0), n.MustDo("EXISTS", rw+":w"), "taken back")
				assert.Equal(t, "m", n.str("GET", rw+":wait"))
				n.pttlNear(t, rw+":wait", 1000)
			}},
		{file: "acquire_write.lua", name: "promised to another writer: refused, taken back", setup: [][]any{{"SET", rw + ":told", promiseOf(waiterM, now+live+100), "PX", 3000}},
			keys: rwK, args: []string{luaCaller, ttl, "1", "m", "1000", "", callerP}, want: []any{int64(0), about(live + 100)},
			check: func(n luaNode, t *testing.T) {
				assert.Equal(t, int64(0), n.MustDo("EXISTS", rw+":w"), "taken back")
				assert.Equal(t, promiseOf(waiterM, now+live+100), n.str("GET", rw+":told"))
			}},
		{file: "acquire_write.lua", name: "claims its promise", setup: [][]any{{"SET", rw + ":told", promiseOf(callerM, now+live+100), "PX", 3000}, {"ZADD", rw + ":watchers", now, callerM}},
			keys: rwK, args: []string{luaCaller, ttl, "1", "m", "1000", callerM, callerP}, want: []any{int64(1), int64(0)},
			check: func(n luaNode, t *testing.T) {
				assert.Equal(t, luaCaller, n.str("GET", rw+":w"))
				assert.Equal(t, int64(0), n.MustDo("EXISTS", rw+":told", rw+":watchers"))
			}},

		{file: "extend_hold.lua", name: "writer renewed", setup: [][]any{{"SET", rw + ":w", luaCaller, "PX", 100}},
			keys: rwK[:3], args: []string{luaCaller, ttl, "1"}, want: int64(1),
			check: func(n luaNode, t *testing.T) { n.pttlNear(t, rw+":w", 5000) }},
		{file: "extend_hold.lua", name: "another writer", setup: [][]any{{"SET", rw + ":w", luaHolder, "PX", 9000}},
			keys: rwK[:3], args: []string{luaCaller, ttl, "1"}, want: int64(0)},

		{file: "release_hold.lua", name: "writer, a reader first: all told, none promised",
			setup: [][]any{{"SET", rw + ":w", luaHolder, "PX", 9000}, {"ZADD", rw + ":watchers", 1, reader + luaChannel, 2, callerM}},
			keys:  holdK, args: []string{luaHolder, "1", lineTTL, claim, "", "", rw}, want: int64(1),
			check: func(n luaNode, t *testing.T) {
				assert.Equal(t, int64(0), n.MustDo("EXISTS", rw+":w"))
				assert.Equal(t, int64(0), n.MustDo("EXISTS", rw+":watchers", rw+":told"), "a reader first: all told and taken out, none promised")
			},
			told: []string{reader + rw, callerP + rw}},
		{file: "release_hold.lua", name: "writer, a writer first: promised and told",
			setup: [][]any{{"SET", rw + ":w", luaHolder, "PX", 9000}, {"ZADD", rw + ":watchers", 2, callerM, 1, waiterM}},
			keys:  holdK, args: []string{luaHolder, "1", lineTTL, claim, "", "", rw}, want: int64(1),
			check: func(n luaNode, t *testing.T) {
				assert.True(t, strings.HasPrefix(n.str("GET", rw+":told"), waiterM+" "))
				assert.Equal(t, []any{waiterM, callerM}, plain(n.MustDo("ZRANGE", rw+":watchers", 0, -1)))
			},
			told: []string{waiterP + rw}},
		{file: "release_hold.lua", name: "a writer's give-back: back among the watchers in its place, and promised",
			setup: [][]any{{"SET", rw + ":w", luaCaller, "PX", 9000}, {"ZADD", rw + ":watchers", 2, waiterM}},
			keys:  holdK, args: []string{luaCaller, "1", lineTTL, claim, callerM, "1", rw}, want: int64(1),
			check: func(n luaNode, t *testing.T) {
				assert.Equal(t, []any{callerM, waiterM}, plain(n.MustDo("ZRANGE", rw+":watchers", 0, -1)))
				assert.True(t, strings.HasPrefix(n.str("GET", rw+":told"), callerM+" "), "promised to the giver")
			},
			told: []string{callerP + rw}},
		{file: "release_hold.lua", name: "a reader's give-back, first again: every watcher told and taken out",
			setup: [][]any{{"ZADD", rw + ":r", now + 9000, luaHolder}, {"ZADD", rw + ":watchers", 2, callerM}},
			keys:  holdK, args: []string{luaHolder, "0", lineTTL, claim, reader + luaChannel, "1", rw}, want: int64(1),
			check: func(n luaNode, t *testing.T) {
				assert.Equal(t, int64(0), n.MustDo("EXISTS", rw+":r", rw+":watchers", rw+":told"))
			},
			told: []string{reader + rw, callerP + rw}},
		{file: "release_hold.lua", name: "a reader, others still read: nobody told",
			setup: [][]any{{"ZADD", rw + ":r", now + 9000, luaHolder, now + 9000, luaEarly}, {"ZADD", rw + ":watchers", now, callerM}},
			keys:  holdK, args: []string{luaHolder, "0", lineTTL, claim, "", "", rw}, want: int64(1),
			check: func(n luaNode, t *testing.T) {
				assert.Equal(t, []any{luaEarly}, plain(n.MustDo("ZRANGE", rw+":r", 0, -1)))
				assert.Equal(t, int64(0), n.MustDo("EXISTS", rw+":told"))
			}},
		{file: "release_hold.lua", name: "the last reader, an expired one left: the writer promised",
			setup: [][]any{{"ZADD", rw + ":r", now + 9000, luaHolder, now - 10, luaEarly}, {"ZADD", rw + ":watchers", now, callerM}},
			keys:  holdK, args: []string{luaHolder, "0", lineTTL, claim, "", "", rw}, want: int64(1),
			check: func(n luaNode, t *testing.T) {
				assert.True(t, strings.HasPrefix(n.str("GET", rw+":told"), callerM+" "))
			},
			told: []string{callerP + rw}},
		{file: "release_hold.lua", name: "promised already: nobody else told",
			setup: [][]any{{"SET", rw + ":w", luaHolder, "PX", 9000}, {"SET", rw + ":told", promiseOf(waiterM, now+live+100), "PX", 3000}, {"ZADD", rw + ":watchers", now, callerM}},
			keys:  holdK, args: []string{luaHolder, "1", lineTTL, claim, "", "", rw}, want: int64(1),
			check: func(n luaNode, t *testing.T) {
				assert.Equal(t, promiseOf(waiterM, now+live+100), n.str("GET", rw+":told"))
			}},
		{file: "release_hold.lua", name: "a lapsed promise: its watcher out, the next promised",
			setup: [][]any{{"SET", rw + ":w", luaHolder, "PX", 9000}, {"SET", rw + ":told", promiseOf(waiterM, now-10), "PX", 3000}, {"ZADD", rw + ":watchers", 1, waiterM, 2, callerM}},
			keys:  holdK, args: []string{luaHolder, "1", lineTTL, claim, "", "", rw}, want: int64(1),
			check: func(n luaNode, t *testing.T) {
				assert.True(t, strings.HasPrefix(n.str("GET", rw+":told"), callerM+" "))
				assert.Equal(t, []any{callerM}, plain(n.MustDo("ZRANGE", rw+":watchers", 0, -1)))
			},
			told: []string{callerP + rw}},
		{file: "release_hold.lua", name: "not a reader", keys: holdK, args: []string{luaCaller, "0", lineTTL, claim, "", "", rw}, want: int64(0)},

		{file: "leave_watch.lua", name: "no promise: out of the watchers", setup: [][]any{{"ZADD", sem + ":watchers", now, callerM, now, waiterM}},
			keys: []string{sem + ":watchers", sem + ":told"}, args: []string{callerM, lineTTL, claim, "", "", sem}, want: int64(1),
			check: func(n luaNode, t *testing.T) {
				assert.Equal(t, []any{waiterM}, plain(n.MustDo("ZRANGE", sem+":watchers", 0, -1)))
			}},
		{file: "leave_watch.lua", name: "a semaphore's promise passed on",
			setup: [][]any{{"ZADD", sem + ":watchers", 1, callerM, 2, earlyM, 3, waiterM}, {"SET", sem + ":told", promiseOf(callerM, now+live) + promiseOf(earlyM, now+live), "PX", 3000}},
			keys:  []string{sem + ":watchers", sem + ":told"}, args: []string{callerM, lineTTL, claim, "", "", sem}, want: int64(1),
			check: func(n luaNode, t *testing.T) {
				promise := n.str("GET", sem+":told")
				assert.True(t, strings.HasPrefix(promise, promiseOf(earlyM, now+live)+waiterM+" "), "the caller's promise now the waiter's: %q", promise)
				assert.Equal(t, []any{earlyM, waiterM}, plain(n.MustDo("ZRANGE", sem+":watchers", 0, -1)), "the one promised already passed over")
			},
			told: []string{waiterP + sem}},
		{file: "leave_watch.lua", name: "a read-write lock's promise passed on",
			setup: [][]any{{"ZADD", rw + ":watchers", now, waiterM}, {"SET", rw + ":told", promiseOf(callerM, now+live), "PX", 3000}},
			keys:  []string{rw + ":watchers", rw + ":told"}, args: []string{callerM, lineTTL, claim, "", "", rw}, want: int64(1),
			check: func(n luaNode, t *testing.T) {
				assert.True(t, strings.HasPrefix(n.str("GET", rw+":told"), waiterM+" "))
			},
			told: []string{waiterP + rw}},
		{file: "leave_watch.lua", name: "another's promise stays",
			setup: [][]any{{"ZADD", rw + ":watchers", now, callerM}, {"SET", rw + ":told", promiseOf(waiterM, now+live), "PX", 3000}},
			keys:  []string{rw + ":watchers", rw + ":told"}, args: []string{callerM, lineTTL, claim, "", "", rw}, want: int64(1),
			check: func(n luaNode, t *testing.T) {
				assert.Equal(t, promiseOf(waiterM, now+live), n.str("GET", rw+":told"))
				assert.Equal(t, int64(0), n.MustDo("EXISTS", rw+":watchers"))
			}},

		{file: "acquire_leader.lua", name: "leads, watchers told", setup: [][]any{{"SET", el + ":fence", 4}, {"ZADD", el + ":watchers", 0, primWatch + luaChannel}},
			keys: []string{el, el + ":fence", el + ":watchers"}, args: []string{luaCaller, "v", ttl, el}, want: []any{int64(1), int64(4)},
			check: func(n luaNode, t *testing.T) {
				assert.Equal(t, []any{luaCaller, "v"}, plain(n.MustDo("HMGET", el, "t", "v")))
				n.pttlNear(t, el, 5000)
			},
			told: []string{primWatch + el}},
		{file: "acquire_leader.lua", name: "another leads", setup: [][]any{{"HSET", el, "t", luaHolder, "v", "w"}},
			keys: []string{el, el + ":fence", el + ":watchers"}, args: []string{luaCaller, "v", ttl, el}, want: []any{int64(0), int64(0)},
			check: func(n luaNode, t *testing.T) { assert.Equal(t, luaHolder, n.str("HGET", el, "t")) }},

		{file: "release_leader.lua", name: "resigned", setup: [][]any{{"HSET", el, "t", luaCaller, "v", "v"}, {"ZADD", el + ":watchers", 0, primWatch + luaChannel}},
			keys: []string{el, el + ":watchers"}, args: []string{luaCaller, el}, want: int64(1),
			check: func(n luaNode, t *testing.T) { assert.Equal(t, int64(0), n.MustDo("EXISTS", el)) },
			told:  []string{primWatch + el}},
		{file: "release_leader.lua", name: "does not lead", setup: [][]any{{"HSET", el, "t", luaHolder, "v", "v"}},
			keys: []string{el, el + ":watchers"}, args: []string{luaCaller, el}, want: int64(0)},

		{file: "read_leader.lua", name: "none", keys: []string{el}, want: []any{}},
		{file: "read_leader.lua", name: "a leader", setup: [][]any{{"HSET", el, "t", luaHolder, "v", "v"}, {"PEXPIRE", el, 9000}},
			keys: []string{el}, want: []any{luaHolder, "v", about(9000)}},

		{file: "watch.lua", name: "registered with its score, its TTL renewed", setup: [][]any{{"ZADD", sem + ":watchers", 5, waiterM}},
			keys: []string{sem + ":watchers"}, args: []string{callerM, watchersTTL, "7"}, want: int64(1),
			check: func(n luaNode, t *testing.T) {
				assert.Equal(t, []any{waiterM, "5", callerM, "7"}, plain(n.MustDo("ZRANGE", sem+":watchers", 0, -1, "WITHSCORES")))
				n.pttlNear(t, sem+":watchers", keyserver.LineTTL.Milliseconds())
			}},

		{file: "inspect.lua", name: "every kind held", keys: inspectKeys(named),
			setup: [][]any{
				{"SET", k, luaHolder + "+", "PX", 9000}, {"ZADD", line, 0, callerM, 0, waiterM}, {"SET", fence, 7},
				{"SET", named.Semaphore, 3, "PX", 9000}, {"SET", named.Semaphore + ":0", luaCaller, "PX", 9000}, {"SET", named.Semaphore + ":2", luaWaiter, "PX", 8000},
				{"ZADD", named.Semaphore + ":watchers", 0, earlyM},
				{"ZADD", named.RW + ":r", time.Now().UnixMilli() + 9000, luaEarly, time.Now().UnixMilli() - 1000, luaUnranked}, {"SET", named.RW + ":wait", "m", "PX", 900},
				{"HSET", named.Election, "t", luaCaller, "v", "host-a"}, {"PEXPIRE", named.Election, 9000}, {"SET", named.Election + ":fence", 4},
			},
			args: []string{maxInspected},
			want: []any{luaHolder, about(9000), int64(2), int64(7), int64(3), int64(1), "", int64(0), int64(1), int64(0),
				luaCaller, "host-a", about(9000), int64(4), int64(2), int64(2), int64(1), luaCaller, about(9000), luaWaiter, about(8000), luaEarly, about(9000)},
			check: func(n luaNode, t *testing.T) {
				assert.Equal(t, luaHolder+"+", n.str("GET", k), "nothing written")
				assert.Equal(t, int64(2), n.MustDo("ZCARD", named.RW+":r"), "an expired reader is left for the writes to drop")
			}},
		{file: "inspect.lua", name: "a writer; the lock held; no permit held", keys: inspectKeys(named),
			setup: [][]any{{"SET", k, luaHolder, "PX", 5000},
				{"SET", named.RW + ":w", luaCaller}, {"SET", named.Semaphore, 3, "PX", 9000}}, // a count without slots binds nothing
			args: []string{maxInspected},
			want: []any{luaHolder, about(5000), int64(0), int64(0), int64(0), int64(0), luaCaller, int64(-1), int64(0), int64(0),
				"", "", int64(0), int64(0), int64(0), int64(0), int64(0)}},

		// The record of the slots past the first 1,024 (key:held), last,
		// after the cases whose promises' deadlines run from the start.
		{file: "acquire_permit.lua", name: "granted past slot 1023: recorded in key:held, which drops a lapsed slot and keeps its longer TTL",
			setup: [][]any{{"ZADD", sem + ":held", now - 5, "1500", now + 9000, "1502"}, {"PEXPIRE", sem + ":held", 9000}},
			keys:  []string{sem, sem + ":1501", sem + ":watchers", sem + ":told"}, args: []string{"2000", "1501", luaCaller, ttl, "32", "", callerP},
			want: []any{int64(1), int64(0)},
			check: func(n luaNode, t *testing.T) {
				assert.Equal(t, []any{"1501", "1502"}, plain(n.MustDo("ZRANGE", sem+":held", 0, -1)))
				n.heldNear(t, sem, "1501", 5000)
				n.pttlNear(t, sem+":held", 9000)
			}},
		{file: "acquire_permit.lua", name: "granted past slot 1023, the first recorded: key:held lives as long as the slot",
			keys: []string{sem, sem + ":1501", sem + ":watchers", sem + ":told"}, args: []string{"2000", "1501", luaCaller, ttl, "32", "", callerP},
			want: []any{int64(1), int64(0)},
			check: func(n luaNode, t *testing.T) {
				n.heldNear(t, sem, "1501", 5000)
				n.pttlNear(t, sem+":held", 5000)
			}},
		{file: "extend_permit.lua", name: "past slot 1023: recorded in key:held", setup: [][]any{{"SET", sem, 3000, "PX", 9000}, {"SET", sem + ":2500", luaCaller, "PX", 1000}},
			keys: []string{sem, sem + ":2500"}, args: []string{"2500", luaCaller, ttl}, want: int64(1),
			check: func(n luaNode, t *testing.T) {
				n.pttlNear(t, sem+":2500", 5000)
				n.heldNear(t, sem, "2500", 5000)
				n.pttlNear(t, sem+":held", 5000)
			}},
		{file: "release_permit.lua", name: "past slot 1023: out of key:held",
			setup: [][]any{{"SET", sem + ":1500", luaHolder, "PX", 9000}, {"ZADD", sem + ":held", now + 9000, "1500", now + 9000, "1511"}},
			keys:  []string{sem + ":1500", sem + ":watchers", sem + ":told"}, args: []string{luaHolder, lineTTL, claim, "", "", sem}, want: int64(1),
			check: func(n luaNode, t *testing.T) {
				assert.Equal(t, int64(0), n.MustDo("EXISTS", sem+":1500"))
				assert.Equal(t, []any{"1511"}, plain(n.MustDo("ZRANGE", sem+":held", 0, -1)), "the slot left key:held")
			}},
		{file: "inspect.lua", name: "10,000 permits: the slots key:held records, past the first 1,024; one lapsed, one gone", keys: inspectKeys(named),
			setup: [][]any{
				{"SET", named.Semaphore, 10000, "PX", 9000},
				{"SET", named.Semaphore + ":5000", luaWaiter, "PX", 8000}, {"SET", named.Semaphore + ":9999", luaEarly, "PX", 9000},
				{"SET", named.Semaphore + ":1", luaCaller, "PX", 9000}, // an earlier version's, unrecorded: among the first ARGV[1]
				{"SET", named.Semaphore + ":7000", luaHolder, "PX", 9000},
				{"ZADD", named.Semaphore + ":held", now + 8000, "5000", now + 9000, "9999", now - 5, "7000", now + 9000, "8000"}, // 7000 lapsed there, 8000 released by hand
			},
			args: []string{"2"}, // lists two
			want: []any{"", int64(0), int64(0), int64(0), int64(10000), int64(0), "", int64(0), int64(0), int64(0),
				"", "", int64(0), int64(0), int64(2), int64(3), int64(0), luaCaller, about(9000), luaWaiter, about(8000)}},
	}

	covered := make(map[string]bool)
	for _, c := range cases {
		covered[c.file] = true
		t.Run(strings.TrimSuffix(c.file, ".lua")+"/"+c.name, func(t *testing.T) {
			n.MustDo("FLUSHALL")
			for _, cmd := range c.setup {
				n.MustDo(cmd[0].(string), cmd[1:]...)
			}
			src := ""
			for _, s := range scripts {
				if s.name == c.file {
					src = s.src
				}
			}
			require.NotEmpty(t, src, "no script lua/%s", c.file)
			args := []any{src, len(c.keys)}
			for _, w := range append(append([]string(nil), c.keys...), c.args...) {
				args = append(args, w)
			}
			reply, err := n.Do("EVAL", args...)
			if want, ok := c.want.(string); ok { // an error reply's first word
				require.Error(t, err)
				assert.True(t, strings.HasPrefix(err.Error(), want), "error %v, want %s", err, want)
			} else {
				require.NoError(t, err)
				n.matchReply(t, c.want, plain(reply))
			}
			if c.check != nil {
				c.check(n, t)
			}
			assert.Equal(t, c.told, told(t, ps), "published on %s", luaChannel)
		})
	}
	for _, s := range scripts {
		assert.True(t, covered[s.name], "no case runs lua/%s", s.name)
	}
}

// told reads what was published to the subscription of ps since it last
// read, up to a PING's answer, which comes after it.
func told(t *testing.T, ps redigo.PubSubConn) []string {
	t.Helper()
	require.NoError(t, ps.Ping("end"))
	var got []string
	for {
		switch m := ps.ReceiveWithTimeout(5 * time.Second).(type) {
		case redigo.Message:
			got = append(got, string(m.Data))
		case redigo.Pong:
			return got
		case error:
			t.Fatal(m)
		}
	}
}

// dial connects to n outside the Server.
func dial(t *testing.T, n luaNode) redigo.Conn {
	t.Helper()
	conn, err := redigo.Dial("tcp", n.Addr(), redigo.DialReadTimeout(10*time.Second))
	require.NoError(t, err)
	return conn
}
