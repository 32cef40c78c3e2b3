package redis

import (
	"context"
	"fmt"
	"slices"
	"strings"
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

// FromURL returns a Server for a redis:// or rediss:// URL (rediss:// for
// TLS) that pipelines every call over one connection of its own
// (WithPooledConnections for a pool instead):
//
//	redis://[[user]:password@]host[:port][/db][?param=value&...]
//
// The port defaults to 6379 and the host to localhost. The query may set:
//
//	db               the database, 0 to 15, as the path may (both only if equal)
//	dial_timeout     bound on connecting, default 5s; connect_timeout is the same
//	read_timeout     bound on waiting for one reply, default 10s
//	write_timeout    bound on sending one command, default 10s
//	client_name      the connection name CLIENT LIST shows
//
// A timeout is a Go duration ("500ms") or a whole number of seconds. The
// redlock client bounds every call by its per-server timeout anyway, so
// these matter only where a call's deadline is longer, or missing. Any
// other parameter is an error rather than ignored, and so is a database
// above 15, the last one a default Redis has: a typo fails here instead of
// at the first lock. A server configured with more databases is reached
// with a URL that names none and WithDialOptions(redigo.DialDatabase(n)).
//
// Errors never repeat the URL or any part of it but the host and port and
// an unknown parameter's name, and not those either when they hold the
// password, so a password cannot reach a log through them; reserved
// characters in a password (% / ? # @) must be percent-encoded. Pass
// WithDialOptions(redigo.DialTLSConfig(cfg)) for a private certificate
// authority; options apply after the URL's parameters. Close the Server to
// close its connections.
//
// A rediss:// URL for a Redis that does not speak TLS cannot fail at once:
// such a server answers nothing to the TLS hello. Each call fails by its
// own deadline (or by the dial timeout) with an error that names the
// server and says that the TLS handshake timed out.
func FromURL(rawurl string, opts ...Option) (*Server, error) {
	u, err := parseURL(rawurl)
	if err != nil {
		return nil, err
	}
	c := config{name: u.addr, maxActive: defaultActive, dialTimeout: u.dialTimeout, callTimeout: u.readTimeout}
	for _, o := range opts {
		o(&c)
	}
	c.inline = len(c.dialOpts) == 0 // a dialer or TLS of the caller's hides the socket
	if c.maxActive < 1 {
		return nil, fmt.Errorf("%w: max connections %d is below 1", keyserver.ErrInvalidArgument, c.maxActive)
	}
	// Clipped: redigo appends to the options of each dial, and dials run
	// concurrently.
	dialOpts := slices.Clip(append(append(u.dialOptions(), guardedDialer(u.dialTimeout, u.writeTimeout)), c.dialOpts...))
	tls := strings.HasPrefix(rawurl, "rediss:")
	return newOwned(c, func(ctx context.Context) (redigo.Conn, error) {
		return guarded(ctx, tls, u.shown, func(ctx context.Context) (redigo.Conn, error) {
			return redigo.DialURLContext(ctx, rawurl, dialOpts...)
		})
	})
}
