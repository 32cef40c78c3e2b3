package redis_test

import (
	"bufio"
	"context"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goredlock/goredlock/keyserver/redis"
)

// TestRepliesThatDeclareTooMuchFailTheCall: something on a Redis port that
// answers each command with a header no Redis reply has (a bulk length
// past int64, an array of four billion elements) fails the call, in
// both connection modes (the pipelined one with ErrConnectionLost), instead of crashing the
// program inside redigo (FuzzPipelineReplies' finding).
func TestRepliesThatDeclareTooMuchFailTheCall(t *testing.T) {
	for _, reply := range []string{"$99999999999999999999\r\n", "*4000000000\r\n"} {
		for _, mode := range []struct {
			name string
			opts []redis.Option
		}{{"pipelined", nil}, {"pooled", []redis.Option{redis.WithPooledConnections()}}} {
			t.Run(mode.name+" "+reply[:2], func(t *testing.T) {
				addr := garbageServer(t, reply)
				s := fromURL(t, "redis://"+addr, mode.opts...)
				ctx, cancel := context.WithTimeout(bg, 10*time.Second)
				defer cancel()
				_, err := s.Acquire(ctx, "k", "t", time.Second)
				require.Error(t, err)
				assert.Contains(t, err.Error(), "is it a Redis server?")
				if mode.opts == nil {
					assert.ErrorIs(t, err, redis.ErrConnectionLost, "the pipelined connection was given up")
				}
			})
		}
	}
}

// garbageServer listens on a local port and answers every line it reads
// with reply, until the test ends.
func garbageServer(t *testing.T, reply string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		conns []net.Conn
	)
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				r := bufio.NewReader(c)
				for {
					if _, err := r.ReadString('\n'); err != nil {
						return
					}
					if _, err := c.Write([]byte(reply)); err != nil {
						return
					}
				}
			}()
		}
	}()
	return ln.Addr().String()
}
