package redis_test

import (
	"context"
	"errors"
	"net/url"
	"strings"
	"testing"
	"time"

	redigo "github.com/gomodule/redigo/redis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goredlock/goredlock/internal/redistest"
	"github.com/goredlock/goredlock/internal/startcall"
	"github.com/goredlock/goredlock/keyserver"
	"github.com/goredlock/goredlock/keyserver/redis"
)

// userURL creates the ACL user app (password pw) on node with rules and
// returns the node's URL for it.
func userURL(t *testing.T, node *redistest.Node, rules ...any) string {
	t.Helper()
	node.MustDo("ACL", append([]any{"SETUSER", "app", "reset", "on", ">pw"}, rules...)...)
	u, err := url.Parse(node.URL(""))
	require.NoError(t, err)
	u.User = url.UserPassword("app", "pw")
	return u.String()
}

// TestScriptCheck: the scripting check knows arguments for every command
// the scripts call, and finds none refused for the default user, nor for
// a user limited to some keys but allowed them all (Redis 7.0 answered
// such a user wrongly, or crashed, for commands checked without
// arguments); it finds the one an ACL denies.
func TestScriptCheck(t *testing.T) {
	src, commands, args := redis.ScriptCheck()
	require.NotEmpty(t, commands)
	for _, c := range commands {
		_, ok := args[c]
		assert.True(t, ok, "no arguments to check %s with", c)
	}
	assert.NotContains(t, commands, "PUBLISH", "in pcall: a user denied it still locks")

	node := redistest.Start(t, 1).Nodes[0]
	allowed := []any{"~app:*", "~{app:*", "~goredlock:incarnation", "+eval"}
	for _, c := range commands {
		allowed = append(allowed, "+"+strings.ToLower(c))
	}
	for _, tc := range []struct {
		name    string
		rules   []any
		missing []string
	}{
		{"least privilege", []any{"~*", "&*", "+@all", "-@dangerous"}, nil},
		{"limited keys", allowed, nil},
		{"no ZADD", append(append([]any(nil), allowed...), "-zadd"), []string{"ZADD"}},
		{"no hashes", append(append([]any(nil), allowed...), "-@hash"), []string{"HGET", "HMGET", "HSET"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u := userURL(t, node, tc.rules...)
			conn, err := redigo.DialURL(u)
			require.NoError(t, err)
			defer conn.Close()
			for i := 0; i < 20; i++ { // Redis 7.0's wrong answers came and went
				got, err := redigo.Strings(conn.Do("EVAL", src, 0))
				require.NoError(t, err)
				assert.ElementsMatch(t, tc.missing, got)
			}
		})
	}
}

// TestServerWithoutScripting is rule 15 on one Server: where scripts
// cannot run, its first write fails before any key is written, naming the
// command and what allows it (typed: RefusedError, ErrPermanent); the
// refusal is kept, not asked again at every call, until the recheck's
// time has passed, and once the ACL allows scripts the Server grants.
func TestServerWithoutScripting(t *testing.T) {
	defer redis.SetRecheckRefused(time.Second)()
	node := redistest.Start(t, 1).Nodes[0]
	u := userURL(t, node, "~*", "&*", "+@all", "-@dangerous", "-@scripting")
	const token = "0000019a2b3c4d01.00000001000000000000000000000001"
	ctx, cancel := context.WithTimeout(bg, 30*time.Second)
	defer cancel()
	var servers []*redis.Server
	for _, opts := range [][]redis.Option{nil, {redis.WithPooledConnections()}} {
		s := fromURL(t, u, opts...)
		servers = append(servers, s)
		calls := map[string]func() error{
			"Acquire":       func() error { _, err := s.Acquire(ctx, "k", token, time.Minute); return err },
			"AcquireInLine": func() error { _, _, err := s.AcquireInLine(ctx, "k", token, time.Minute, ""); return err },
			"AcquireFenced": func() error { _, _, err := s.AcquireFenced(ctx, "k", token, time.Minute); return err },
			"Extend":        func() error { _, err := s.Extend(ctx, "k", token, time.Minute); return err },
			"AcquireAll": func() error {
				_, _, err := s.AcquireAll(ctx, []string{"a", "b"}, token, time.Minute)
				return err
			},
		}
		for name, call := range calls {
			err := call()
			require.Error(t, err, name)
			assert.ErrorIs(t, err, keyserver.ErrPermanent, name)
			var re *redis.RefusedError
			require.True(t, errors.As(err, &re), "%s: %v", name, err)
			assert.Equal(t, []string{"EVAL"}, re.Commands, name)
			assert.Contains(t, re.Rule, "+@scripting", name)
			assert.Contains(t, err.Error(), s.String(), "%s: names the server", name)
			keys, err := redigo.Strings(node.MustDo("KEYS", "*"), nil)
			require.NoError(t, err)
			assert.Equal(t, []string{"goredlock:incarnation"}, keys, "%s: no key but the marker", name)
		}
	}
	assert.Equal(t, 2, rejectedEvals(t, node), "asked once per Server, not at every call")

	node.MustDo("ACL", "SETUSER", "app", "+@scripting")
	s := servers[0]
	_, err := s.Acquire(ctx, "k", token, time.Minute)
	assert.ErrorIs(t, err, keyserver.ErrPermanent, "the refusal kept")
	time.Sleep(time.Second)
	ok, err := s.Acquire(ctx, "k", token, time.Minute)
	require.NoError(t, err, "the ACL allows scripts now")
	assert.True(t, ok)
	ok, err = s.Release(ctx, "k", token)
	require.NoError(t, err)
	assert.True(t, ok)
}

// rejectedEvals reads how many EVALs node refused (INFO commandstats).
func rejectedEvals(t *testing.T, node *redistest.Node) int {
	t.Helper()
	for _, line := range strings.Split(redistest.Text(node.MustDo("INFO", "commandstats")), "\r\n") {
		if rest, ok := strings.CutPrefix(line, "cmdstat_eval:"); ok {
			for _, f := range strings.Split(rest, ",") {
				if v, ok := strings.CutPrefix(f, "rejected_calls="); ok {
					n := 0
					for _, d := range v {
						n = n*10 + int(d-'0')
					}
					return n
				}
			}
		}
	}
	return 0
}

// TestStartedFirstAcquireChecks: a fresh FromURL Server starts its first
// acquire as the scripting check and the SET NX in one script: where the
// user may not run a command the scripts call, the started call is
// answered with the refusal and writes nothing; where EVALSHA alone is
// refused, the scripts are sent by their source and locks work.
func TestStartedFirstAcquireChecks(t *testing.T) {
	node := redistest.Start(t, 1).Nodes[0]
	const token = "0000019a2b3c4d01.00000001000000000000000000000001"
	c := startcall.Call{Op: startcall.CallAcquire, Key: "k", Token: token, TTL: time.Minute}

	s := fromURL(t, userURL(t, node, "~*", "&*", "+@all", "-@dangerous", "-zpopmin"))
	a := start(t, s, c)
	require.Error(t, a.Err)
	assert.ErrorIs(t, a.Err, keyserver.ErrPermanent)
	var re *redis.RefusedError
	require.ErrorAs(t, a.Err, &re)
	assert.Equal(t, []string{"ZPOPMIN"}, re.Commands)
	keys, err := redigo.Strings(node.MustDo("KEYS", "*"), nil)
	require.NoError(t, err)
	assert.Equal(t, []string{"goredlock:incarnation"}, keys, "nothing written but the marker")
	assert.False(t, startcall.Of(s).Start(bg, c, newCompletion(true)), "the refusal kept: the blocking method returns it")

	s = fromURL(t, userURL(t, node, "~*", "&*", "+@all", "-@dangerous", "-evalsha"))
	a = start(t, s, c)
	require.NoError(t, a.Err)
	assert.True(t, a.OK)
	for i := 0; i < 3; i++ { // by digest once SCRIPT LOAD gave it, refused, then by source
		ok, err := s.Extend(bg, "k", token, time.Minute)
		require.NoError(t, err, "EVALSHA refused: the script by its source")
		assert.True(t, ok)
	}
	ok, err := s.Release(bg, "k", token)
	require.NoError(t, err)
	assert.True(t, ok)
	assert.Nil(t, node.MustDo("GET", "k"))
}
