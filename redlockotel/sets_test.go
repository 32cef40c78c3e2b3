package redlockotel_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"

	"github.com/goredlock/goredlock/keyserver/static"
	"github.com/goredlock/goredlock/redlock"
	"github.com/goredlock/goredlock/redlockotel"
)

var namesKey = attribute.Key("redlock.lock.names")

// TestSetsCarryTheirNames: each set operation's span and acquire metrics
// carry the number of its names (duplicates dropped), under the names
// joined by commas and the operation's own name.
func TestSetsCarryTheirNames(t *testing.T) {
	fn := func(context.Context) error { return nil }
	for _, tc := range []struct {
		op      string
		refused bool // every server holds one of the names for another
		call    func(*redlock.Client) error
		names   string
		n       int
		outcome string
	}{{
		op:    "acquire_all",
		names: "a,b,c", n: 3, outcome: "acquired",
		call: func(c *redlock.Client) error {
			l, err := c.AcquireAll(bg, []string{"a", "b", "c", "b"}, time.Second)
			if err == nil {
				err = l.Release(bg)
			}
			return err
		},
	}, {
		op:    "try_acquire_all",
		names: "a,b", n: 2, outcome: "held_elsewhere", refused: true,
		call: func(c *redlock.Client) error {
			_, err := c.TryAcquireAll(bg, []string{"a", "b"}, time.Second)
			return err
		},
	}, {
		op:    "do_all",
		names: "x,y", n: 2, outcome: "acquired",
		call: func(c *redlock.Client) error { return c.DoAll(bg, []string{"x", "y"}, time.Second, fn) },
	}, {
		op:    "do_all_or_skip",
		names: "x,y,z,w", n: 4, outcome: "held_elsewhere", refused: true,
		call: func(c *redlock.Client) error {
			ran, err := c.DoAllOrSkip(bg, []string{"x", "y", "z", "w"}, time.Second, fn)
			assert.False(t, ran)
			return err
		},
	}, {
		op:    "do_all",
		names: "solo", n: 1, outcome: "acquired",
		call: func(c *redlock.Client) error { return c.DoAll(bg, []string{"solo"}, time.Second, fn) },
	}} {
		t.Run(tc.op+"/"+tc.names, func(t *testing.T) {
			tm := newTelemetry(t)
			servers := static.NewCluster(3)
			if tc.refused {
				servers = static.Table([][]bool{{false}, {false}, {false}})
			}
			client := newClient(t, servers, tm.hooks())
			err := tc.call(client)
			if tc.op == "try_acquire_all" {
				require.ErrorIs(t, err, redlock.ErrHeldElsewhere)
			} else {
				require.NoError(t, err)
			}
			require.NoError(t, client.Close())

			s := tm.span(t)
			assert.Equal(t, "redlock."+tc.op, s.Name())
			got := attrs(s.Attributes()...)
			assert.Equal(t, tc.names, got[lockName])
			assert.Equal(t, int64(tc.n), got[namesKey])
			assert.Equal(t, tc.outcome, got[outcome])
			assert.Contains(t, eventNames(s), "redlock.attempt")

			want := key(lockName.String(tc.names), opName.String(tc.op), namesKey.Int(tc.n), outcome.String(tc.outcome))
			ms := tm.metrics(t)
			assert.Equal(t, []string{want}, keys(histogram[float64](t, ms["redlock.lock.acquire.duration"])))
			assert.Equal(t, []string{want}, keys(histogram[int64](t, ms["redlock.lock.acquire.attempts"])))
			requireNoTokens(t, tm, servers)
		})
	}
}

// TestSetsWithoutLockName: without the name, a set's acquire metrics keep
// the number of its names; one lock's carry none.
func TestSetsWithoutLockName(t *testing.T) {
	tm := newTelemetry(t)
	client := newClient(t, static.NewCluster(3), tm.hooks(redlockotel.WithoutLockName()))
	l, err := client.AcquireAll(bg, []string{"invoice-1", "invoice-2"}, time.Second)
	require.NoError(t, err)
	require.NoError(t, l.Release(bg))
	l, err = client.Acquire(bg, "invoice-3", time.Second)
	require.NoError(t, err)
	require.NoError(t, l.Release(bg))
	require.NoError(t, client.Close())

	assert.ElementsMatch(t, []string{
		key(opName.String("acquire_all"), namesKey.Int(2), outcome.String("acquired")),
		key(opName.String("acquire"), outcome.String("acquired")),
	}, keys(histogram[float64](t, tm.metrics(t)["redlock.lock.acquire.duration"])))
}
