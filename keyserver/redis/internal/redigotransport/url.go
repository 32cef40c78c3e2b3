package redigotransport

import (
	"context"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	redigo "github.com/gomodule/redigo/redis"
)

// Pool tuning of FromURL: enough idle connections for a busy client,
// health-checked after a minute idle, and dial bounds so a dead host fails
// fast even without a context deadline.
const (
	maxIdle        = 16
	idleTimeout    = 4 * time.Minute
	checkIdleAfter = time.Minute
	connectTimeout = 5 * time.Second
	ioTimeoutNoCtx = 10 * time.Second
)

// URL is a redis:// or rediss:// URL that ParseURL found valid, from which
// FromURL's transports dial their connections.
type URL struct {
	raw string
	urlSettings
}

// ParseURL validates rawurl and reads its settings (see keyserver/redis's
// FromURL). Its errors, marked keyserver.ErrInvalidArgument, never show
// the password.
func ParseURL(rawurl string) (*URL, error) {
	s, err := parseURL(rawurl)
	if err != nil {
		return nil, err
	}
	return &URL{raw: rawurl, urlSettings: s}, nil
}

// Addr is the URL's host and port: the server's name in errors.
func (u *URL) Addr() string { return u.addr }

// Wait returns the URL's wait=N (aof false, N replicas) or waitaof=L,N,
// and false when it gives neither.
func (u *URL) Wait() (aof bool, local, replicas int, ok bool) {
	return u.waitAOF, u.waitLocal, u.waitReplicas, u.waitSet
}

// Pipelined returns FromURL's transport: every call over one connection
// dialed to u with opts after the URL's own options, holding at most
// maxPending calls, and confirming the writes of DoConfirmed and
// StartConfirmed with confirm (none if its Judge is nil).
func (u *URL) Pipelined(opts []redigo.DialOption, maxPending int, confirm Confirming) *Pipelined {
	dial := u.dialer(opts)
	c := settings{
		maxPending:  maxPending,
		dialTimeout: u.dialTimeout,
		callTimeout: u.readTimeout,
		inline:      len(opts) == 0, // a dialer or TLS of the caller's hides the socket
		confirm:     confirm,
	}
	return &Pipelined{pipeline: newPipeline(dial, c), pubSub: pubSub{get: dial, dialTimeout: u.dialTimeout}}
}

// Pooled returns FromURL's transport with WithPooledConnections: each call
// on a connection of its own from a pool of at most maxActive connections
// dialed to u with opts after the URL's own options.
func (u *URL) Pooled(opts []redigo.DialOption, maxActive int) *Pooled {
	dial := u.dialer(opts)
	dials := new(atomic.Int64)
	pool := newPool(func(ctx context.Context) (redigo.Conn, error) {
		c, err := dial(ctx)
		if err == nil {
			dials.Add(1) // so that the Server reads its Redis's incarnation again
		}
		return c, err
	}, maxActive)
	return &Pooled{pool: pool, own: pool, dials: dials, pubSub: pubSub{get: dial, dialTimeout: u.dialTimeout}}
}

// dialer returns the dial of u's connections: redigo's, with opts after
// the URL's own options, under a guard (see guarded).
func (u *URL) dialer(opts []redigo.DialOption) func(context.Context) (redigo.Conn, error) {
	// Clipped: redigo appends to the options of each dial, and dials run
	// concurrently.
	dialOpts := slices.Clip(append(append(u.dialOptions(), guardedDialer(u.dialTimeout, u.writeTimeout)), opts...))
	tls := strings.HasPrefix(u.raw, "rediss:")
	return func(ctx context.Context) (redigo.Conn, error) {
		return guarded(ctx, tls, u.shown, func(ctx context.Context) (redigo.Conn, error) {
			return redigo.DialURLContext(ctx, u.raw, dialOpts...)
		})
	}
}
