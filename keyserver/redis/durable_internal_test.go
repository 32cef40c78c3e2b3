package redis

import (
	"errors"
	"fmt"
	"testing"

	redigo "github.com/gomodule/redigo/redis"
	"github.com/stretchr/testify/assert"

	"github.com/goredlock/goredlock/keyserver"
	"github.com/goredlock/goredlock/keyserver/redis/internal/redigotransport"
)

// TestJudge reads the answers of WAIT and WAITAOF: enough acknowledgements
// confirm, too few or none fail the vote, and an error reply fails it
// without passing for the write's own error reply (a caller that read
// "unknown command" through it would take EVALSHA for refused).
func TestJudge(t *testing.T) {
	wait := &durability{replicas: 1}
	aof := &durability{aof: true, local: 1, replicas: 0}
	for _, tc := range []struct {
		name      string
		d         *durability
		reply     any
		err       error
		confirms  bool
		permanent bool
		contains  string
	}{
		{"a replica", wait, int64(1), nil, true, false, ""},
		{"no replica", wait, int64(0), nil, false, false, "0 of 1 replicas"},
		{"fsynced", aof, []any{int64(1), int64(0)}, nil, true, false, ""},
		{"not fsynced", aof, []any{int64(0), int64(0)}, nil, false, false, "fsynced locally 0"},
		{"an unknown command", aof, nil, redigo.Error("ERR unknown command 'WAITAOF', with args beginning with: "), false, true, "WAITAOF replied"},
		{"a lost connection", wait, nil, fmt.Errorf("%w: EOF", redigotransport.ErrConnectionLost), false, false, "connection lost"},
		{"a reply of the wrong kind", wait, "OK", nil, false, false, "unexpected reply OK to WAIT"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.d.judge(tc.reply, tc.err)
			if tc.confirms {
				assert.NoError(t, err)
				return
			}
			assert.ErrorIs(t, err, errNotDurable)
			assert.ErrorContains(t, err, tc.contains)
			assert.Equal(t, tc.permanent, errors.Is(err, keyserver.ErrPermanent), "permanent")
			var reply redigo.Error
			assert.False(t, errors.As(err, &reply), "an error reply of the WAIT's reads as none")
			if tc.err != nil && !errors.As(tc.err, &reply) {
				assert.ErrorIs(t, err, tc.err, "another error is kept")
			}
		})
	}
}
