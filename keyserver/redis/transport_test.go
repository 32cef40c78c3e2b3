package redis_test

import (
	"context"
	"net/url"
	"testing"

	redigo "github.com/gomodule/redigo/redis"

	"github.com/goredlock/goredlock/keyserver/redis"
	"github.com/goredlock/goredlock/keyserver/redis/transporttest"
)

// targetURL writes a transporttest target as FromURL's URL, with the
// options its TLS configuration needs.
func targetURL(target transporttest.Target) (string, []redis.Option) {
	u := url.URL{Scheme: "redis", Host: target.Addr}
	if target.Password != "" || target.Username != "" {
		u.User = url.UserPassword(target.Username, target.Password)
	}
	var opts []redis.Option
	if target.TLS != nil {
		u.Scheme = "rediss"
		opts = append(opts, redis.WithDialOptions(redigo.DialTLSConfig(target.TLS)))
	}
	return u.String(), opts
}

func TestTransportPipelined(t *testing.T) {
	transporttest.Run(t, func(t *testing.T, target transporttest.Target) (*redis.Server, error) {
		u, opts := targetURL(target)
		return redis.FromURL(u, opts...)
	}, transporttest.WithCountedConnections())
}

func TestTransportPooled(t *testing.T) {
	transporttest.Run(t, func(t *testing.T, target transporttest.Target) (*redis.Server, error) {
		u, opts := targetURL(target)
		return redis.FromURL(u, append(opts, redis.WithPooledConnections())...)
	}, transporttest.WithCountedConnections())
}

// TestTransportCallersPool runs the suite through New, over a pool the
// test owns, as a caller's: calls made while others are in flight share
// one borrowed connection.
func TestTransportCallersPool(t *testing.T) {
	transporttest.Run(t, callersPool())
}

// TestTransportCallersPoolPerCall runs the suite through New with
// WithPooledConnections: a connection of its own per call.
func TestTransportCallersPoolPerCall(t *testing.T) {
	transporttest.Run(t, callersPool(redis.WithPooledConnections()))
}

// TestTransportCallersPoolCounted runs the suite through New over a pool
// that counts its dials (CountDials) and keeps idle connections: no INFO
// on warm connections, and a restart still seen.
func TestTransportCallersPoolCounted(t *testing.T) {
	counted := func(p *redigo.Pool) redis.Pool {
		p.MaxIdle = 4
		return redis.CountDials(p)
	}
	transporttest.Run(t, callersPoolOf(counted), transporttest.WithCountedConnections())
}

// callersPool makes Servers with New over a pool the test owns.
func callersPool(opts ...redis.Option) func(t *testing.T, target transporttest.Target) (*redis.Server, error) {
	return callersPoolOf(func(p *redigo.Pool) *redigo.Pool { return p }, opts...)
}

// callersPoolOf makes Servers with New over the pool that lend makes of a
// pool the test owns.
func callersPoolOf[P redis.Pool](lend func(*redigo.Pool) P, opts ...redis.Option) func(t *testing.T, target transporttest.Target) (*redis.Server, error) {
	return func(t *testing.T, target transporttest.Target) (*redis.Server, error) {
		u, _ := targetURL(target)
		var dialOpts []redigo.DialOption
		if target.TLS != nil {
			dialOpts = append(dialOpts, redigo.DialTLSConfig(target.TLS))
		}
		pool := &redigo.Pool{
			DialContext: func(ctx context.Context) (redigo.Conn, error) {
				return redigo.DialURLContext(ctx, u, dialOpts...)
			},
			MaxActive: 16,
			Wait:      true,
		}
		t.Cleanup(func() { pool.Close() })
		return redis.New(lend(pool), opts...), nil
	}
}
