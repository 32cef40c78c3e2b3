package redis

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"time"

	redigo "github.com/gomodule/redigo/redis"

	"github.com/goredlock/goredlock/keyserver"
)

// Pool tuning of FromURL: enough idle connections for a busy client,
// health-checked after a minute idle, and dial bounds so a dead host fails
// fast even without a context deadline.
const (
	maxIdle        = 16
	defaultActive  = 64
	idleTimeout    = 4 * time.Minute
	checkIdleAfter = time.Minute
	connectTimeout = 5 * time.Second
	ioTimeoutNoCtx = 10 * time.Second
)

// FromURL returns a Server with its own pool for a redis:// or rediss://
// URL: redis://[[user]:password@]host[:port][/db], rediss:// for TLS. Pass
// WithDialOptions(redigo.DialTLSConfig(cfg)) for a private certificate
// authority. Close the Server to close its pool.
func FromURL(rawurl string, opts ...Option) (*Server, error) {
	u, err := url.Parse(rawurl)
	if err != nil {
		return nil, fmt.Errorf("%w: redis URL: %v", keyserver.ErrInvalidArgument, err)
	}
	if u.Scheme != "redis" && u.Scheme != "rediss" {
		return nil, fmt.Errorf("%w: redis URL %q: scheme %q is not redis or rediss", keyserver.ErrInvalidArgument, u.Redacted(), u.Scheme)
	}
	host := u.Host
	if _, _, err := net.SplitHostPort(host); err != nil {
		host = net.JoinHostPort(u.Hostname(), "6379")
	}
	c := config{name: host, maxActive: defaultActive}
	for _, o := range opts {
		o(&c)
	}
	if c.maxActive < 1 {
		return nil, fmt.Errorf("%w: max connections %d is below 1", keyserver.ErrInvalidArgument, c.maxActive)
	}
	// Validate the rest of the URL (database number, opaque forms) now
	// rather than at the first lock.
	if err := checkURL(u); err != nil {
		return nil, fmt.Errorf("%w: redis URL %q: %v", keyserver.ErrInvalidArgument, u.Redacted(), err)
	}
	dialOpts := append([]redigo.DialOption{
		redigo.DialConnectTimeout(connectTimeout),
		redigo.DialReadTimeout(ioTimeoutNoCtx),
		redigo.DialWriteTimeout(ioTimeoutNoCtx),
	}, c.dialOpts...)
	return newOwned(c, func(ctx context.Context) (redigo.Conn, error) {
		return redigo.DialURLContext(ctx, rawurl, dialOpts...)
	})
}

func checkURL(u *url.URL) error {
	if u.Opaque != "" {
		return fmt.Errorf("opaque URL")
	}
	if p := u.Path; p != "" && p != "/" {
		var db int
		if _, err := fmt.Sscanf(p, "/%d", &db); err != nil || fmt.Sprintf("/%d", db) != p {
			return fmt.Errorf("database %q is not a number", p[1:])
		}
	}
	return nil
}
