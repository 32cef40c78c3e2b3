package redigotransport

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync/atomic"
	"time"

	redigo "github.com/gomodule/redigo/redis"
)

// redigo bounds a TLS handshake by its own timeout, not by the dial's
// context: a server that accepts the connection and never answers the
// handshake (a plain Redis under rediss://) held a dial, and Close, until
// that timeout. The dialer FromURL gives redigo closes the connection it is
// making as soon as the dial's context ends, which Close's does.
//
// A plain Redis reads a TLS hello as the start of an inline command whose
// end never comes, and answers nothing: the dial waits in the handshake
// until a timeout, and without a word about TLS the error only said that
// the call was still connecting. A TLS dial therefore notes when its hello
// went out and whether anything came back (dialProgress), and a call that
// ends while the hello is unanswered says so, naming the server.

// dialGuardKey carries a dial's guard in its context.
type dialGuardKey struct{}

// dialGuard holds, for one dial, what stops the watch of its connection,
// and whether the connection is plain (not TLS), so that its replies can
// be read through a replyGuard; for a TLS dial, its progress and the
// server as errors may name it.
type dialGuard struct {
	stop     func() bool
	plain    bool
	progress *dialProgress // nil for a plain dial
	shown    string        // host:port, or "" when it would show the password
}

// dialProgressKey carries, in a dial's context, the *dialProgress that the
// dial's caller watches: the pipeline, for the calls that end while it
// dials.
type dialProgressKey struct{}

// dialProgress tells how far a TLS dial has got.
type dialProgress struct {
	// hello is the server, as errors may name it, once the TCP connection
	// is made and the TLS hello is about to go out; nil before.
	hello atomic.Pointer[string]
	// answered is set by the first byte the server sends back.
	answered atomic.Bool
}

// unanswered reports whether the dial sent a TLS hello that nothing has
// answered yet, and to which server. p may be nil.
func (p *dialProgress) unanswered() (shown string, ok bool) {
	if p == nil {
		return "", false
	}
	addr := p.hello.Load()
	if addr == nil || p.answered.Load() {
		return "", false
	}
	return *addr, true
}

// stalled is the error of a call that ended with err while the dial of
// its connection was still running. p may be nil.
func (p *dialProgress) stalled(err error) error {
	if shown, ok := p.unanswered(); ok {
		return tlsUnanswered(shown, err)
	}
	return fmt.Errorf("still connecting: %w", err)
}

// tlsUnanswered wraps err, the end of a wait for a TLS handshake that the
// server shown never answered, with what to check. Timed out unless err
// is a cancellation.
func tlsUnanswered(shown string, err error) error {
	if shown == "" {
		shown = "the server"
	}
	what := "timed out"
	if errors.Is(err, context.Canceled) {
		what = "was given up unanswered"
	}
	return fmt.Errorf("TLS handshake with %s %s: is the server speaking TLS? (nothing came back to the TLS hello, as from a Redis without TLS, or a server that hangs): %w", shown, what, err)
}

// answerWatch is the connection of a TLS dial: it notes the first byte
// the server sends.
type answerWatch struct {
	net.Conn
	answered *atomic.Bool
}

func (w *answerWatch) Read(b []byte) (int, error) {
	n, err := w.Conn.Read(b)
	if n > 0 && !w.answered.Load() {
		w.answered.Store(true)
	}
	return n, err
}

// guardedDialer returns the net dialer FromURL gives redigo: it dials as
// redigo would, and closes the connection when the dial's context ends
// before the dial (handshake and AUTH included) returns. A plain
// connection is read through a replyGuard; a TLS one through an
// answerWatch. writeTimeout is the one given to redigo, for the pipeline
// that writes on the connection itself.
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
			} else if g.progress != nil {
				read = &answerWatch{Conn: c, answered: &g.progress.answered}
				g.progress.hello.Store(&g.shown)
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

// guarded runs dial under a guard (see guardedDialer); shown is the
// server as its errors may name it ("" when that would show the
// password). A TLS dial that timed out, or that its context ended, with
// its hello unanswered says so (see tlsUnanswered); another dial that its
// context ended says that too.
func guarded(ctx context.Context, tls bool, shown string, dial func(context.Context) (redigo.Conn, error)) (redigo.Conn, error) {
	g := &dialGuard{plain: !tls, shown: shown}
	if tls { // its socket carries records, not replies
		ctx = context.WithValue(ctx, netConnKey{}, (*netConnBox)(nil))
		if g.progress, _ = ctx.Value(dialProgressKey{}).(*dialProgress); g.progress == nil {
			g.progress = new(dialProgress)
		}
	}
	rc, err := dial(context.WithValue(ctx, dialGuardKey{}, g))
	if g.stop != nil {
		g.stop()
	}
	if err == nil {
		return rc, nil
	}
	ended := ctx.Err()
	var ne net.Error
	timedOut := errors.As(err, &ne) && ne.Timeout()
	if _, ok := g.progress.unanswered(); ok && (ended != nil || timedOut) {
		if ended != nil {
			// Not the read error of the connection the guard closed.
			err = ended
		}
		return nil, tlsUnanswered(g.shown, err)
	}
	if ended != nil {
		err = errors.Join(ended, err)
	}
	return nil, err
}
