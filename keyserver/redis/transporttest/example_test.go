package transporttest_test

import (
	"context"
	"testing"

	redigo "github.com/gomodule/redigo/redis"

	"github.com/goredlock/goredlock/keyserver/redis"
	"github.com/goredlock/goredlock/keyserver/redis/transporttest"
)

// A transport's test hands Run a function that makes a key server to each
// Redis the suite starts. Here the transport is redigo's, through a pool
// the test owns; a transport over another client builds its client from
// the target the same way.
func ExampleRun() {
	_ = func(t *testing.T) { // the body of a TestTransport
		transporttest.Run(t, func(t *testing.T, target transporttest.Target) (*redis.Server, error) {
			pool := &redigo.Pool{DialContext: func(ctx context.Context) (redigo.Conn, error) {
				return redigo.DialContext(ctx, "tcp", target.Addr,
					redigo.DialUsername(target.Username), redigo.DialPassword(target.Password),
					redigo.DialUseTLS(target.TLS != nil), redigo.DialTLSConfig(target.TLS))
			}}
			t.Cleanup(func() { pool.Close() })
			return redis.New(pool), nil
		})
	}
}
