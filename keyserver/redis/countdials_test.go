package redis_test

import (
	"context"
	"errors"
	"testing"

	redigo "github.com/gomodule/redigo/redis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goredlock/goredlock/internal/redistest"
	"github.com/goredlock/goredlock/keyserver/redis"
)

// TestCountDials: a counted pool counts the connections it dials, through
// DialContext or Dial, and not the dials that failed or the connections
// it reuses.
func TestCountDials(t *testing.T) {
	addr := redistest.Start(t, 1).Nodes[0].Addr()
	refused := errors.New("refused")
	for _, tc := range []struct {
		name string
		pool func(fail *bool) *redigo.Pool
	}{
		{"DialContext", func(fail *bool) *redigo.Pool {
			return &redigo.Pool{MaxIdle: 2, DialContext: func(ctx context.Context) (redigo.Conn, error) {
				if *fail {
					return nil, refused
				}
				return redigo.DialContext(ctx, "tcp", addr)
			}}
		}},
		{"Dial", func(fail *bool) *redigo.Pool {
			return &redigo.Pool{MaxIdle: 2, Dial: func() (redigo.Conn, error) {
				if *fail {
					return nil, refused
				}
				return redigo.Dial("tcp", addr)
			}}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fail := false
			p := tc.pool(&fail)
			counted := redis.CountDials(p).(redis.ConnectionCounter)
			defer p.Close()
			opened := func() int64 {
				n, ok := counted.Connections()
				require.True(t, ok)
				return n
			}
			assert.Equal(t, int64(0), opened())

			c := p.Get()
			_, err := c.Do("PING")
			require.NoError(t, err)
			require.NoError(t, c.Close()) // back to the pool, idle
			c = p.Get()                   // the same one
			_, err = c.Do("PING")
			require.NoError(t, err)
			assert.Equal(t, int64(1), opened(), "a reused connection is not a new one")

			second := p.Get() // the first is in use: a new one
			_, err = second.Do("PING")
			require.NoError(t, err)
			assert.Equal(t, int64(2), opened())

			fail = true
			third := p.Get()
			assert.ErrorIs(t, third.Err(), refused)
			assert.Equal(t, int64(2), opened(), "a failed dial is no connection")
			for _, c := range []redigo.Conn{c, second, third} {
				c.Close()
			}
		})
	}
}

// TestCountDialsWithoutDial: a pool with no dial function stays one, and a
// nil pool gives nil.
func TestCountDialsWithoutDial(t *testing.T) {
	p := redis.CountDials(&redigo.Pool{})
	_, err := p.GetContext(context.Background())
	assert.Error(t, err)
	n, ok := p.(redis.ConnectionCounter).Connections()
	assert.True(t, ok)
	assert.Equal(t, int64(0), n)
	assert.Nil(t, redis.CountDials(nil))
}
