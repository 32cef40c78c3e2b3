package redigotransport

import (
	"context"
	"sync"
	"time"

	redigo "github.com/gomodule/redigo/redis"
)

// A call on a connection of its own (New's calls made alone, FromURL's
// with WithPooledConnections) is made by its caller, with no goroutine of
// its own. redigo's DoContext starts one per call, so that the caller can
// return when its context ends while the read goes on, and hands the
// reply over a channel: for one caller at a time on one node, doing
// without cut the client's CPU per lock and unlock by about a quarter
// (BenchmarkLockUnlock, pooled and callers-pool with 1 goroutine). Here
// the read is bounded at the socket by the context's deadline
// (DoWithTimeout, which then takes the place of the connection's read
// timeout), and a context that ends otherwise, cancelled, closes the
// network connection beneath the read from context.AfterFunc, which
// starts a goroutine only when it fires. Either way the call returns when
// its context ends, as with DoContext, and the connection, closed, is not
// pooled again.

// doDirect runs cmd on conn, a connection no other goroutine uses, until
// ctx ends. A context that can never end leaves the bound to the
// connection's read timeout, as DoContext does.
func doDirect(ctx context.Context, conn redigo.Conn, cmd string, args []any) (any, error) {
	if ctx.Done() == nil {
		return conn.Do(cmd, args...)
	}
	cc, ok := conn.(redigo.ConnWithContext)
	if !ok {
		return redigo.DoContext(conn, ctx, cmd, args...) // fails: it needs ConnWithContext too
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	k := &killer{conn: cc}
	k.wg.Add(1)
	stop := context.AfterFunc(ctx, k.kill)
	var (
		reply any
		err   error
	)
	dl, bounded := ctx.Deadline()
	if cwt, ok := conn.(redigo.ConnWithTimeout); ok && bounded {
		reply, err = cwt.DoWithTimeout(max(time.Until(dl), time.Nanosecond), cmd, args...)
	} else {
		reply, err = conn.Do(cmd, args...)
	}
	if !stop() {
		k.wg.Wait() // the close has been made: the connection may be put back
	}
	if _, isReply := err.(redigo.Error); err != nil && !isReply {
		// A read that failed because the context ended, at the socket's
		// deadline or by the close, says so, as DoContext does (the
		// context's timer may not have fired yet at the deadline).
		if cerr := ctx.Err(); cerr != nil {
			return nil, cerr
		}
		if bounded && !time.Now().Before(dl) {
			return nil, context.DeadlineExceeded
		}
	}
	return reply, err
}

// killer closes a connection whose caller's context ended.
type killer struct {
	conn redigo.ConnWithContext
	wg   sync.WaitGroup // done once the connection is closed
}

func (k *killer) kill() {
	defer k.wg.Done()
	kill(k.conn)
}

// expired is a context whose deadline has passed.
var expired = func() context.Context {
	ctx, cancel := context.WithDeadline(context.Background(), time.Time{})
	cancel()
	return ctx
}()

// kill closes the network connection beneath conn at once, so that a read
// or a write in progress on another goroutine returns, without a read or a
// write of its own and without touching the state a redigo.Pool keeps for
// the connection (which Send and Do write): a receive whose deadline has
// passed makes redigo mark the connection failed and close its socket
// before it reads anything. A Pool then discards the connection when it is
// given back.
func kill(conn redigo.ConnWithContext) {
	conn.ReceiveContext(expired) //nolint:errcheck // fails on purpose
}
