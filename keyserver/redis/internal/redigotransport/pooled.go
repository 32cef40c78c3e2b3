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

// Pooled is the transport of New, and of FromURL with
// WithPooledConnections: each call runs on a connection of its own taken
// from a Pool, the caller's or one FromURL made, unless (New without
// WithPooledConnections) other calls are in flight, when it goes to the
// pipeline over a connection borrowed from the caller's Pool.
type Pooled struct {
	pubSub
	pool Pool
	own  *redigo.Pool // the pool FromURL made, closed by Close
	// dials counts the connections of own; nil for the caller's pool,
	// which may count its own (see Connections).
	dials *atomic.Int64

	// shared, for New's Server, pipelines the calls made while another
	// is in flight over one connection borrowed from pool; active counts
	// the calls in Do.
	shared *pipeline
	active atomic.Int64
}

// Borrow returns New's transport over the caller's pool: a call made while
// another is in flight goes to a pipeline, holding at most maxPending
// calls, over one connection borrowed from pool, unless perCall, which
// keeps every call on a connection of its own.
func Borrow(pool Pool, perCall bool, maxPending int) *Pooled {
	t := &Pooled{pool: pool, pubSub: pubSub{get: pool.GetContext, borrowed: true, dialTimeout: connectTimeout}}
	if !perCall {
		t.shared = newPipeline(borrow(pool), settings{maxPending: maxPending})
	}
	return t
}

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

// Do runs one command on a connection from the pool, or, for New's
// Server when other calls are in flight, on the shared connection.
func (p *Pooled) Do(ctx context.Context, cmd, keys []string, args ...string) (any, error) {
	c, ok := newCall(cmd, keys, args)
	if !ok {
		return nil, errTooManyWords
	}
	if p.shared != nil {
		n := p.active.Add(1)
		defer p.active.Add(-1)
		if n > 1 {
			reply, _, err := p.shared.run(ctx, c)
			return reply, err
		}
	}
	defer putCall(c)
	return p.retry(ctx, c)
}

// normalize turns a redigo reply into the kinds keyserver/redis's
// Transport.Do returns.
func normalize(reply any) (any, error) {
	switch r := reply.(type) {
	case []byte:
		return string(r), nil
	case []any:
		for i, e := range r {
			var err error
			if r[i], err = normalize(e); err != nil {
				return nil, err
			}
		}
	case redigo.Error:
		return nil, r
	}
	return reply, nil
}

// Close closes the pool FromURL made; a pool given to New stays open, and
// gets back the connection the shared pipeline held.
func (p *Pooled) Close() error {
	if p.shared != nil {
		p.shared.stop()
	}
	if p.own != nil {
		return p.own.Close()
	}
	return nil
}

// Connections is the count of the pool's dials (keyserver/redis's
// ConnectionCounter): FromURL's pool's, or the caller's when it keeps one
// (CountDials). Every connection of New's Server comes from the pool: the
// calls', the shared pipeline's and the subscriber's.
func (p *Pooled) Connections() (int64, bool) {
	if p.dials != nil {
		return p.dials.Load(), true
	}
	if c, ok := p.pool.(interface{ Connections() (int64, bool) }); ok {
		return c.Connections()
	}
	return 0, false
}

// retry runs c on a pooled connection. A connection that turns out to be
// broken (the server restarted since it was pooled) is replaced, as are
// the other idle ones a restart broke with it, up to the pool's idle
// connections and one more: running a lock operation twice is harmless
// (the scripts are idempotent, and a SET NX that had run answers nil the
// second time, so that Acquire runs its script, which finds its own
// token). A failed dial is tried once more, not per idle connection.
func (p *Pooled) retry(ctx context.Context, c *call) (any, error) {
	var err error
	dials := 0
	for try := 0; try < maxIdle+2 && dials < 2; try++ {
		var reply any
		reply, err = p.once(ctx, c)
		if err == nil {
			return reply, nil
		}
		if !retryable(ctx, err) {
			break
		}
		if errors.Is(err, errConnecting) {
			dials++
		}
	}
	return nil, err
}

func (p *Pooled) once(ctx context.Context, c *call) (any, error) {
	conn, err := p.pool.GetContext(ctx)
	if err != nil {
		return nil, connecting(err)
	}
	defer conn.Close()
	var words [maxArgs]any // redigo takes its words as interfaces
	for i, w := range c.args[:c.nargs] {
		words[i] = w
	}
	reply, err := doDirect(ctx, conn, c.cmd, words[:c.nargs])
	if err != nil {
		return nil, err
	}
	return normalize(reply)
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
func connecting(err error) error { return fmt.Errorf("%w: %w", errConnecting, err) }

// errConnecting is what connecting marks.
var errConnecting = errors.New("connecting")
