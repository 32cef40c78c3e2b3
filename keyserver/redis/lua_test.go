package redis

import (
	"fmt"
	"io/fs"
	"path"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goredlock/goredlock/keyserver"
)

// TestLuaFilesAreTheScripts checks that the embedded files and the
// Server's scripts are the same set: a file no script runs is an error,
// as is a script loaded twice (a script without a file fails newScript).
func TestLuaFilesAreTheScripts(t *testing.T) {
	files, err := fs.Glob(luaFiles, "lua/*.lua")
	require.NoError(t, err)
	used := make(map[string]bool)
	for _, s := range scripts {
		assert.False(t, used[s.name], "lua/%s is loaded twice", s.name)
		used[s.name] = true
	}
	for _, f := range files {
		assert.True(t, used[path.Base(f)], "%s is no script of the Server", f)
	}
	assert.Len(t, files, len(scripts))
}

// TestLuaNumbers checks the numbers the scripts write out against the Go
// constants they stand for.
func TestLuaNumbers(t *testing.T) {
	const dot = 16 + 1 // where keyserver.RankOf looks for a ranked token's dot, counted from 1
	ranked := fmt.Sprintf("#v == %d and string.byte(v, %d) == 46 and string.byte(v, -1) ~= 126", keyserver.TokenLen, dot)
	rank := fmt.Sprintf(`
	if #t == %[1]d + 1 and string.byte(t, -1) == 43 then
		t = string.sub(t, 1, %[1]d)
	end
	if #t == %[1]d and string.byte(t, %[2]d) == 46 then
		return string.sub(t, 1, %[3]d)
	end`, keyserver.TokenLen, dot, keyserver.RankLen)
	notify := []string{
		fmt.Sprintf("string.sub(m, %d), string.sub(m, 1, %d) .. ARGV[#ARGV]", promiseLen+1, promiseLen),
		fmt.Sprintf("string.byte(first[1], %d) == %d", promiseLen, readerMark),
	}
	for file, want := range map[string][]string{
		"acquire_or_holder.lua": {rank},
		"acquire_in_line.lua":   {ranked, rank},
		"release.lua":           {ranked},
		"acquire_permit.lua":    {fmt.Sprintf("math.min(tonumber(ARGV[1]), %d)", 2*keyserver.MaxFreeHint)},
		"release_permit.lua":    notify,
		"release_hold.lua":      notify,
		"acquire_leader.lua":    notify,
		"release_leader.lua":    notify,
	} {
		src, err := luaFiles.ReadFile("lua/" + file)
		require.NoError(t, err)
		for _, w := range want {
			assert.True(t, strings.Contains(string(src), w), "lua/%s lacks %q", file, w)
		}
	}
}
