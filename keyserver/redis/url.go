package redis

import (
	"fmt"

	"github.com/goredlock/goredlock/keyserver"
	"github.com/goredlock/goredlock/keyserver/redis/internal/redigotransport"
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
//	wait             N: a write is a vote once N replicas have it (WithWait)
//	waitaof          L,N: once fsynced locally (L=1) and by N replicas (WithWaitAOF)
//
// A timeout is a Go duration ("500ms") or a whole number of seconds; the
// redlock client's per-server timeout bounds every call anyway. Any other
// parameter, or a database above 15, is an error, so that a typo fails here
// rather than at the first lock; reach a server with more databases by a URL
// that names none and WithDialOptions(redigo.DialDatabase(n)).
//
// Errors quote of the URL only the host and port and an unknown parameter's
// name, never the password; reserved characters in a password (% / ? # @)
// must be percent-encoded. Pass WithDialOptions(redigo.DialTLSConfig(cfg))
// for a private certificate authority; options apply after the URL's
// parameters. Close the Server to close its connections.
//
// A rediss:// URL for a Redis that does not speak TLS cannot fail at once,
// as such a server answers nothing to the TLS hello: each call fails by its
// deadline (or the dial timeout), saying that the TLS handshake timed out.
func FromURL(rawurl string, opts ...Option) (*Server, error) {
	u, err := redigotransport.ParseURL(rawurl)
	if err != nil {
		return nil, err
	}
	c := config{name: u.Addr(), maxActive: defaultActive}
	if aof, local, replicas, ok := u.Wait(); ok {
		c.wait = &durability{aof: aof, local: local, replicas: replicas}
	}
	for _, o := range opts {
		o(&c)
	}
	if c.maxActive < 1 {
		return nil, fmt.Errorf("%w: max connections %d is below 1", keyserver.ErrInvalidArgument, c.maxActive)
	}
	return newOwned(u, c)
}
