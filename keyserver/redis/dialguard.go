package redis

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	redigo "github.com/gomodule/redigo/redis"
)

// redigo bounds a TLS handshake by its own timeout, not by the dial's
// context: a server that accepts the connection and never answers the
// handshake (a plain Redis under rediss://) held a dial, and Close, until
// that timeout. The dialer FromURL gives redigo closes the connection it is
// making as soon as the dial's context ends, which Close's does.

// dialGuardKey carries a dial's guard in its context.
type dialGuardKey struct{}

// dialGuard holds, for one dial, what stops the watch of its connection,
// and whether the connection is plain (not TLS), so that its replies can
// be read through a replyGuard.
type dialGuard struct {
	stop  func() bool
	plain bool
}

// guardedDialer returns the net dialer FromURL gives redigo: it dials as
// redigo would, and closes the connection when the dial's context ends
// before the dial (handshake and AUTH included) returns. A plain
// connection is read through a replyGuard. writeTimeout is the one given
// to redigo, for the pipeline that writes on the connection itself.
func guardedDialer(timeout, writeTimeout time.Duration) redigo.DialOption {
	d := net.Dialer{Timeout: timeout, KeepAlive: 5 * time.Minute}
	return redigo.DialContextFunc(func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		var read net.Conn = c
		var guard *replyGuard
		if g, ok := ctx.Value(dialGuardKey{}).(*dialGuard); ok {
			g.stop = context.AfterFunc(ctx, func() { c.Close() }) //nolint:errcheck // abandoned
			if g.plain {
				guard = &replyGuard{Conn: c}
				read = guard // redigo reads through the guard
			}
		}
		if box, ok := ctx.Value(netConnKey{}).(*netConnBox); ok && box != nil {
			// The pipeline makes calls inline on it (see inline.go) and
			// writes them on it (see wire.go); it reads through redigo.
			box.conn, box.guard, box.writeTimeout = c, guard, writeTimeout
		}
		return read, nil
	})
}

// guarded runs dial under a guard (see guardedDialer). A dial that its
// context ended says so, and that a TLS server was expected when it was.
func guarded(ctx context.Context, tls bool, dial func(context.Context) (redigo.Conn, error)) (redigo.Conn, error) {
	if tls { // its socket carries records, not replies
		ctx = context.WithValue(ctx, netConnKey{}, (*netConnBox)(nil))
	}
	g := &dialGuard{plain: !tls}
	rc, err := dial(context.WithValue(ctx, dialGuardKey{}, g))
	if g.stop != nil {
		g.stop()
	}
	if err != nil && ctx.Err() != nil {
		err = errors.Join(ctx.Err(), err)
		if tls {
			err = fmt.Errorf("the TLS handshake did not finish (does the server serve TLS, as rediss:// asks?): %w", err)
		}
	}
	return rc, err
}
