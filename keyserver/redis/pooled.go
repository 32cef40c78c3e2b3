package redis

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	redigo "github.com/gomodule/redigo/redis"
)

// The pooled mode runs each call on a connection of its own, taken from a
// Pool: the caller's (New) or one FromURL makes with WithPooledConnections.

// newPool returns the pool FromURL makes with WithPooledConnections.
func newPool(dial func(context.Context) (redigo.Conn, error), maxActive int) *redigo.Pool {
	return &redigo.Pool{
		DialContext: dial,
		TestOnBorrowContext: func(ctx context.Context, conn redigo.Conn, lastUsed time.Time) error {
			if time.Since(lastUsed) < checkIdleAfter {
				return nil
			}
			_, err := redigo.DoContext(conn, ctx, "PING")
			return err
		},
		MaxIdle:     maxIdle,
		MaxActive:   maxActive,
		Wait:        true,
		IdleTimeout: idleTimeout,
	}
}

// runPooled runs sc on a pooled connection.
func (s *Server) runPooled(ctx context.Context, sc *script, keysAndArgs []any) (int64, error) {
	return s.retryPooled(ctx, func(conn redigo.Conn) (int64, error) {
		return redigo.Int64(sc.pool.DoContext(ctx, conn, keysAndArgs...))
	})
}

// setNXPooled runs SET key token NX PX ms on a pooled connection, and
// reports whether it stored token.
func (s *Server) setNXPooled(ctx context.Context, key, token string, ms int64) (bool, error) {
	n, err := s.retryPooled(ctx, func(conn redigo.Conn) (int64, error) {
		reply, err := redigo.DoContext(conn, ctx, "SET", key, token, "NX", "PX", ms)
		if err != nil || reply == nil {
			return 0, err
		}
		if s, ok := reply.(string); !ok || s != "OK" {
			return 0, fmt.Errorf("unexpected reply %v to SET NX", reply)
		}
		return 1, nil
	})
	return n == 1, err
}

// retryPooled runs cmd on a pooled connection. A connection that turns out
// to be broken (the server restarted since it was pooled) is replaced once:
// running a lock operation twice is harmless (the scripts are idempotent,
// and a SET NX that had run answers nil the second time, so that Acquire
// runs its script, which finds its own token).
func (s *Server) retryPooled(ctx context.Context, cmd func(redigo.Conn) (int64, error)) (int64, error) {
	var err error
	for try := 0; try < 2; try++ {
		var n int64
		n, err = s.runOnce(ctx, cmd)
		if err == nil {
			return n, nil
		}
		if !retryable(ctx, err) {
			break
		}
	}
	return 0, err
}

func (s *Server) runOnce(ctx context.Context, cmd func(redigo.Conn) (int64, error)) (int64, error) {
	conn, err := s.pool.GetContext(ctx)
	if err != nil {
		return 0, connecting(err)
	}
	defer conn.Close()
	return cmd(conn)
}

// retryable reports whether err came from a connection that broke, rather
// than from Redis itself or from the deadline.
func retryable(ctx context.Context, err error) bool {
	if ctx.Err() != nil {
		return false
	}
	var redisErr redigo.Error
	if errors.As(err, &redisErr) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return false
	}
	var netErr net.Error
	if errors.As(err, &netErr) && netErr.Timeout() {
		return false
	}
	return true
}
