package redis

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	redigo "github.com/gomodule/redigo/redis"
)

// pooled is the transport of New, and of FromURL with
// WithPooledConnections: each call runs on a connection of its own taken
// from a Pool, the caller's or one FromURL made.
type pooled struct {
	redigoPubSub
	pool Pool
	own  *redigo.Pool // the pool FromURL made, closed by Close
}

var _ Transport = (*pooled)(nil)

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

// Eval runs EVALSHA, or EVAL when digest is "" or the server answers
// NOSCRIPT.
func (p *pooled) Eval(ctx context.Context, digest, src string, keys []string, args []any) (int64, error) {
	cmdArgs := make([]any, 0, 2+len(keys)+len(args))
	cmdArgs = append(cmdArgs, digest, len(keys))
	for _, k := range keys {
		cmdArgs = append(cmdArgs, k)
	}
	cmdArgs = append(cmdArgs, args...)
	return p.retry(ctx, func(conn redigo.Conn) (int64, error) {
		if digest != "" {
			n, err := redigo.Int64(redigo.DoContext(conn, ctx, "EVALSHA", cmdArgs...))
			if err == nil || !strings.HasPrefix(err.Error(), "NOSCRIPT") {
				return n, err
			}
		}
		cmdArgs[0] = src
		return redigo.Int64(redigo.DoContext(conn, ctx, "EVAL", cmdArgs...))
	})
}

// LoadScript runs SCRIPT LOAD src.
func (p *pooled) LoadScript(ctx context.Context, src string) (string, error) {
	var digest string
	_, err := p.retry(ctx, func(conn redigo.Conn) (int64, error) {
		var err error
		digest, err = redigo.String(redigo.DoContext(conn, ctx, "SCRIPT", "LOAD", src))
		return 0, err
	})
	return digest, err
}

// SetNX runs SET key value NX PX ttl.
func (p *pooled) SetNX(ctx context.Context, key, value string, ttl time.Duration) (bool, error) {
	n, err := p.retry(ctx, func(conn redigo.Conn) (int64, error) {
		reply, err := redigo.DoContext(conn, ctx, "SET", key, value, "NX", "PX", ttl.Milliseconds())
		if err != nil || reply == nil {
			return 0, err
		}
		if s, ok := reply.(string); !ok || s != "OK" {
			return 0, fmt.Errorf("unexpected reply %T to SET NX", reply)
		}
		return 1, nil
	})
	return n == 1, err
}

// Get runs GET key.
func (p *pooled) Get(ctx context.Context, key string) (string, bool, error) {
	var v []byte
	_, err := p.retry(ctx, func(conn redigo.Conn) (int64, error) {
		var err error
		v, err = redigo.Bytes(redigo.DoContext(conn, ctx, "GET", key))
		if errors.Is(err, redigo.ErrNil) {
			v, err = nil, nil
		}
		return 0, err
	})
	return string(v), v != nil, err
}

// Close closes the pool FromURL made; a pool given to New stays open.
func (p *pooled) Close() error {
	if p.own != nil {
		return p.own.Close()
	}
	return nil
}

// retry runs cmd on a pooled connection. A connection that turns out to be
// broken (the server restarted since it was pooled) is replaced once:
// running a lock operation twice is harmless (the scripts are idempotent,
// and a SET NX that had run answers nil the second time, so that Acquire
// runs its script, which finds its own token).
func (p *pooled) retry(ctx context.Context, cmd func(redigo.Conn) (int64, error)) (int64, error) {
	var err error
	for try := 0; try < 2; try++ {
		var n int64
		n, err = p.once(ctx, cmd)
		if err == nil {
			return n, nil
		}
		if !retryable(ctx, err) {
			break
		}
	}
	return 0, err
}

func (p *pooled) once(ctx context.Context, cmd func(redigo.Conn) (int64, error)) (int64, error) {
	conn, err := p.pool.GetContext(ctx)
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

// connecting marks a failure to open a connection, so that it reads
// differently from a call that failed on an open one.
func connecting(err error) error { return fmt.Errorf("connecting: %w", err) }
