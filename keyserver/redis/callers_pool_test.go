package redis_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	redigo "github.com/gomodule/redigo/redis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goredlock/goredlock/internal/redistest"
	"github.com/goredlock/goredlock/keyserver/redis"
)

// countingPool is a redigo pool to addr, as a caller would make one (no
// read timeout: only the call's context bounds a read), that counts the
// connections it dials.
func countingPool(t *testing.T, addr string) (*redigo.Pool, *atomic.Int64) {
	dials := new(atomic.Int64)
	pool := &redigo.Pool{MaxIdle: 64, MaxActive: 64, Wait: true, DialContext: func(ctx context.Context) (redigo.Conn, error) {
		dials.Add(1)
		return redigo.DialContext(ctx, "tcp", addr)
	}}
	t.Cleanup(func() { pool.Close() })
	return pool, dials
}

// TestCallersPoolSharesOneConnectionUnderLoad: 64 callers at once on New's
// Server share one borrowed connection, rather than taking one each from
// the pool; a call alone takes one of its own.
func TestCallersPoolSharesOneConnectionUnderLoad(t *testing.T) {
	node := redistest.Start(t, 1).Nodes[0]
	pool, dials := countingPool(t, node.Addr())
	s := redis.New(pool)
	defer s.Close()

	var wg sync.WaitGroup
	for g := 0; g < 64; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			key := fmt.Sprint("k", g)
			for i := 0; i < 20; i++ {
				ok, err := s.Acquire(bg, key, "t", time.Minute)
				assert.True(t, ok && err == nil, "acquire: %v %v", ok, err)
				ok, err = s.Release(bg, key, "t")
				assert.True(t, ok && err == nil, "release: %v %v", ok, err)
			}
		}()
	}
	wg.Wait()
	// At most one call runs on a connection of its own at a time (a
	// second finds the first in flight), and the shared one is one more.
	assert.LessOrEqual(t, dials.Load(), int64(2), "connections dialed for 2,560 calls from 64 callers")
}

// TestCallersPoolGivesItsConnectionsBack: the connections New's Server
// took from the pool are back once it is closed, also the shared ones that
// broke under it (killed by Redis while 16 callers were using them).
func TestCallersPoolGivesItsConnectionsBack(t *testing.T) {
	node := redistest.Start(t, 1).Nodes[0]
	pool, _ := countingPool(t, node.Addr())
	s := redis.New(pool)

	var wg sync.WaitGroup
	for g := 0; g < 16; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			key := fmt.Sprint("k", g)
			for i := 0; i < 50; i++ {
				if ok, err := s.Acquire(bg, key, "t", time.Minute); err == nil && ok {
					s.Release(bg, key, "t") //nolint:errcheck // a killed connection fails some calls
				}
			}
		}()
	}
	for i := 0; i < 3; i++ {
		time.Sleep(20 * time.Millisecond)
		do(t, node, "CLIENT", "KILL", "TYPE", "normal")
	}
	wg.Wait()
	ok, err := s.Acquire(bg, "after", "t", time.Minute)
	require.NoError(t, err)
	require.True(t, ok, "the Server works after its connections were killed")
	require.NoError(t, s.Close())
	st := pool.Stats() // ActiveCount counts the idle connections too
	assert.Equal(t, 0, st.ActiveCount-st.IdleCount, "connections still out of the pool after Close")
}

// TestCallersPoolCallsEndWithTheirContext: on a paused Redis, a call
// through New returns when its context ends, by its deadline or by a
// cancel (a context without a deadline, over a pool without read timeout:
// nothing else would end the read), alone on a connection of its own or
// shared by many; and once Redis resumes, every later call gets its own
// reply, so no connection was given back to the pool with a reply still
// due.
func TestCallersPoolCallsEndWithTheirContext(t *testing.T) {
	for _, mode := range []struct {
		name string
		opts []redis.Option
	}{{"shared", nil}, {"per-call", []redis.Option{redis.WithPooledConnections()}}} {
		t.Run(mode.name, func(t *testing.T) {
			node := redistest.Start(t, 1).Nodes[0]
			pool, _ := countingPool(t, node.Addr())
			s := redis.New(pool, mode.opts...)
			defer s.Close()
			_, err := s.Acquire(bg, "warm", "t", time.Minute)
			require.NoError(t, err)
			node.Pause()
			resumed := false
			defer func() {
				if !resumed {
					node.Resume()
				}
			}()

			// Well under a second: a call that ended only when Redis
			// resumed, or at a read timeout, would not.
			const bound = 900 * time.Millisecond
			for _, callers := range []int{1, 16} {
				for _, cancelled := range []bool{false, true} {
					var wg sync.WaitGroup
					for c := 0; c < callers; c++ {
						wg.Add(1)
						go func() {
							defer wg.Done()
							ctx, cancel := context.WithTimeout(bg, 100*time.Millisecond)
							want := context.DeadlineExceeded
							if cancelled {
								ctx, cancel = context.WithCancel(bg)
								want = context.Canceled
								time.AfterFunc(100*time.Millisecond, cancel)
							}
							defer cancel()
							start := time.Now()
							_, err := s.Acquire(ctx, fmt.Sprint("late", c), "t", time.Minute)
							took := time.Since(start)
							assert.ErrorIs(t, err, want, "%d callers, cancelled %v", callers, cancelled)
							assert.Less(t, took, bound, "%d callers, cancelled %v", callers, cancelled)
						}()
					}
					wg.Wait()
				}
			}

			node.Resume()
			resumed = true
			for i := 0; i < 20; i++ {
				key := fmt.Sprint("after", i)
				ok, err := s.Acquire(bg, key, "mine", time.Minute)
				require.NoError(t, err)
				require.True(t, ok, "a free key is granted")
				ok, err = s.Acquire(bg, key, "other", time.Minute)
				require.NoError(t, err)
				require.False(t, ok, "a held key is refused")
				ok, err = s.Release(bg, key, "mine")
				require.NoError(t, err)
				require.True(t, ok, "the holder releases")
			}
		})
	}
}
