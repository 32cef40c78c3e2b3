package redis

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/goredlock/goredlock/keyserver"
)

// TestRefusalOf reads the refusals of Redis 7.0, Redis 7.4 and Valkey 8.0
// (their replies, as each gave them): what is missing and what grants it.
func TestRefusalOf(t *testing.T) {
	for _, tc := range []struct {
		msg      string
		commands []string
		rule     string // in the rule
	}{
		{"NOPERM this user has no permissions to run the 'info' command", []string{"INFO"}, "+info"},
		{"NOPERM User app has no permissions to run the 'config|get' command", []string{"CONFIG|GET"}, "+config|get"},
		{"NOPERM this user has no permissions to run the 'eval' command", []string{"EVAL"}, "+@scripting"},
		{"ERR ACL failure in script: User app has no permissions to run the 'zadd' command script: 6314439a, on @user_script:1.", []string{"ZADD"}, "+zadd"},
		{"ERR The user executing the script can't run this command or subcommand script: 3c4f3016, on @user_script:1.", nil, "minimal ACL"},
		{"NOPERM this user has no permissions to access one of the keys used as arguments", nil, `covers "job" and the keys beside it ({job}:*)`},
		{"NOPERM No permissions to access a key", nil, "~goredlock:incarnation"},
		{"ERR The user executing the script can't access at least one of the keys mentioned in the command arguments script: d1601a09, on @user_script:1.", nil, "~"},
		{"NOPERM this user has no permissions to access one of the channels used as arguments", nil, "&goredlock:*"},
		{"NOPERM No permissions to access a channel", nil, "&goredlock:*"},
		{"ERR unknown command 'EVAL', with args beginning with: 'return 1' '0' ", []string{"EVAL"}, "renamed, disabled or absent"},
	} {
		r := refusalOf(tc.msg, "job")
		if !assert.NotNil(t, r, tc.msg) {
			continue
		}
		assert.Equal(t, tc.commands, r.Commands, tc.msg)
		assert.Contains(t, r.Rule, tc.rule, tc.msg)
		r.Err = errors.New(tc.msg)
		assert.ErrorIs(t, r, keyserver.ErrPermanent)
		assert.NotContains(t, r.Error(), "with args beginning with", "the reply's quoted arguments left out")
	}
	for _, msg := range []string{"LOADING Redis is loading the dataset in memory", "WRONGTYPE Operation against a key holding the wrong kind of value", "BUSY Redis is busy running a script"} {
		assert.Nil(t, refusalOf(msg, "job"), msg)
	}
}
