package redigotransport

import (
	"errors"
	"net"
	"syscall"
	"time"

	redigo "github.com/gomodule/redigo/redis"
)

// A call alone on an idle pipelined connection is made inline: its caller
// writes it and reads its reply itself, as on a pooled connection, instead
// of handing it to the writer and having the reader hand the reply back.
// Those two hand-offs wake two goroutines, and on a machine with idle
// cores each wake-up costs a thread wake-up: with one caller at a time
// they made a lock and unlock slower pipelined than pooled. Calls that find
// others queued or unanswered go through the writer as before, so under
// load they are still coalesced.
//
// The caller reads only once its reply can be read: it waits for the
// socket to be readable, for at most inlineWait and not past its
// deadline. What the read that ends the wait takes from the socket is kept
// by the connection's replyGuard, which hands it to redigo's next read, so
// the reply costs one read system call, as on a pooled connection, and not
// a look and then a read. A caller whose reply has not come by then has
// taken nothing: it leaves the reply whole, hands the reading to the
// connection's reader and waits for its reply, or for its context, as a
// queued call does; a reply it gives up on is read and dropped. The
// connection stays open and the calls keep their order. (Waiting on the
// socket, a caller cannot watch its context: a cancellation is noticed
// within inlineWait. Watching it there, with context.AfterFunc, cost a
// twentieth of a lone caller's CPU.)
//
// While a connection is idle nobody reads it, so a server that closed it
// (a restart, its idle timeout) is noticed when it is next used: a look at
// the socket (MSG_PEEK, without waiting) before a call is written to an
// idle connection finds the close, or anything the server sent unasked,
// and the connection is replaced, as the reader's read would have found
// them at once. A connection written to less than idleLook ago is not
// looked at: a server closes an idle connection after a whole second at
// the least (its timeout), and a close in those few milliseconds, a
// restart or a kill, fails the call that meets it as it fails the calls
// in flight; the look was a twentieth of a lone caller's lock and unlock.
//
// Only connections whose socket the pipeline reaches are made inline:
// plain TCP or Unix connections dialed by FromURL's own dialer. A TLS
// connection (whose bytes the socket shows are not replies; a server may
// send session tickets while it is idle), and one dialed through the
// caller's dial options, keep a reader that reads at all times.

// idleWatch is what a caller needs to make its call inline on a
// connection: to see that it is sound, and to wait for its reply.
type idleWatch struct {
	nc  net.Conn
	raw syscall.RawConn
	// guard, when not nil, is what redigo reads the connection through:
	// a wait reads into it (see replyGuard.takeFrom); nil: a wait looks.
	guard *replyGuard

	// The state of a look at the socket, kept here so that a look
	// allocates nothing: only the holder of the reading role looks.
	buf          [1]byte
	n            int
	err          error
	look, waitOn func(fd uintptr) bool
}

// idleLook is how long a connection must have been idle before a call
// looks at its socket first (see idleWatch.sound): far below the one
// second of Redis's shortest idle timeout, far above the time between the
// calls of a caller that locks and unlocks at once.
const idleLook = 10 * time.Millisecond

// inlineWait is the longest a caller waits inline for its reply before it
// hands the reading to the connection's reader: far above a round trip to
// a Redis nearby, and short enough for a cancellation to be noticed soon.
const inlineWait = time.Millisecond

// netConnKey carries, in a dial's context, where FromURL's dialer leaves
// the network connection it made (a *netConnBox).
type netConnKey struct{}

// netConnBox receives the network connection of a dial, the replyGuard
// redigo reads it through (nil if none), and the write timeout the dial's
// redigo connection would have set.
type netConnBox struct {
	conn         net.Conn
	guard        *replyGuard
	writeTimeout time.Duration
}

// newIdleWatch returns the watch of nc, read through guard (or nil), or
// nil when its socket cannot be looked at without reading it.
func newIdleWatch(nc net.Conn, guard *replyGuard) *idleWatch {
	sc, ok := nc.(syscall.Conn)
	if !ok || !canPeek {
		return nil
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return nil
	}
	w := &idleWatch{nc: nc, raw: raw, guard: guard}
	w.look = func(fd uintptr) bool { w.n, w.err = peek(fd, w.buf[:]); return true }
	w.waitOn = func(fd uintptr) bool {
		if guard != nil {
			return guard.takeFrom(fd) // false: nothing yet, wait until readable
		}
		w.n, w.err = peek(fd, w.buf[:])
		return !errors.Is(w.err, syscall.EAGAIN)
	}
	return w
}

// errClosedByServer is why an idle connection the server closed is
// replaced.
var errClosedByServer = errors.New("closed by the server while idle")

// sound reports, without waiting, why the idle connection cannot carry a
// call: the server closed it, or sent something no call asked for; nil
// when it can.
func (w *idleWatch) sound() error {
	// A read deadline that has passed would fail the look without a
	// look: the socket keeps the last wait's or read's deadline, which a
	// connection idle for longer has outlived.
	if g := w.guard; g == nil || (!g.set.IsZero() && time.Until(g.set) <= 0) {
		if err := w.nc.SetReadDeadline(time.Time{}); err != nil {
			return err
		}
		if g != nil {
			g.set = time.Time{}
		}
	}
	if err := w.raw.Read(w.look); err != nil {
		return err
	}
	switch {
	case w.err == nil && w.n == 0:
		return errClosedByServer
	case w.err == nil:
		return errors.New("the server sent a reply no call asked for")
	case errors.Is(w.err, syscall.EAGAIN):
		return nil
	}
	return w.err
}

// await waits until the connection can be read, for at most inlineWait
// and not past deadline, and reports whether it can: nil when a reply (or
// the end of the connection) can be read.
func (w *idleWatch) await(deadline time.Time) error {
	now := time.Now()
	if limit := now.Add(inlineWait); limit.Before(deadline) {
		deadline = limit
	}
	if err := w.readDeadline(now, deadline); err != nil {
		return err
	}
	// The read deadline is left set: every read of the socket sets its
	// own (redigo.ReceiveWithTimeout, through the guard).
	return w.raw.Read(w.waitOn)
}

// readDeadline bounds a wait on the socket by d. A deadline an earlier
// wait set is kept when it ends after half an inlineWait from now and not
// after d: the calls of a caller that locks and unlocks at once then share
// one timer update, and a wait still ends within inlineWait.
func (w *idleWatch) readDeadline(now, d time.Time) error {
	g := w.guard
	if g == nil {
		return w.nc.SetReadDeadline(d)
	}
	if g.set.After(now.Add(inlineWait/2)) && !g.set.After(d) {
		return nil
	}
	if err := w.nc.SetReadDeadline(d); err != nil {
		return err
	}
	g.set = d
	return nil
}

// inline makes c inline on the current connection if it is idle, and
// reports whether it did, and whether c is answered (its reply in c.reply
// and c.err, without a signal on c.done); a call made inline and not
// answered is answered through c.done, by the reader or by the failure of
// the connection. A call not made inline the caller queues.
func (p *pipeline) inline(c *call) (made, answered bool) {
	if p.pending.Load() > 1 { // others are on their way
		return false, false
	}
	p.mu.Lock()
	cn := p.cn
	if cn == nil || cn.idle == nil || p.writing || len(p.queue) > 0 || !cn.claim() {
		p.mu.Unlock()
		return false, false
	}
	p.writing = true
	p.mu.Unlock()
	sent := p.sendInline(cn, c)
	p.doneWriting()
	if !sent {
		return false, false
	}
	if err := cn.idle.await(c.due); err != nil {
		cn.pass()  // the reader reads c's reply, whenever it comes
		p.signal() // and the writer's watchdog watches c
		return true, false
	}
	// The reply is there (or the connection's end): a read that still
	// waits is one that stopped mid-reply, given as long as the watchdog
	// would give it.
	reply, err := redigo.ReceiveWithTimeout(cn.rc, max(time.Until(c.due.Add(p.overdue)), time.Millisecond))
	if _, isReply := err.(redigo.Error); err != nil && !isReply {
		p.fail(cn, err)
		return true, false
	}
	cn.mu.Lock()
	cn.sent.pop() // c: it was pushed on an idle connection, and first
	pass := cn.sent.size > 0 || cn.releaseLocked()
	cn.mu.Unlock()
	if pass {
		cn.pass() // the calls the writer sent meanwhile, or the close
	}
	if err == nil {
		reply, err = normalize(reply)
	}
	c.reply, c.err = reply, err // for its caller, here: no signal, no select
	p.pending.Add(-1)
	return true, true
}

// sendInline writes c on cn, whose reading role its caller holds, and
// reports whether it did. A connection found unsound is failed instead,
// and the writer replaces it.
func (p *pipeline) sendInline(cn *conn, c *call) bool {
	if err := cn.sound(); err != nil {
		p.fail(cn, err)
		return false
	}
	return cn.send([]*call{c}) // the role is held: send passes it to nobody
}

// claim takes the reading role of an idle connection: sound as far as
// the reader knows, nothing unanswered, nobody reading, and no write
// waiting for the writer to send its WAIT (see confirm.go).
func (cn *conn) claim() bool {
	cn.mu.Lock()
	defer cn.mu.Unlock()
	if cn.dead || cn.reading || cn.sent.size > 0 || cn.conf != nil {
		return false
	}
	cn.reading = true
	return true
}

// soundIfIdle reports whether cn can carry the writer's batch: it is not
// idle, or it is and sound. An idle connection found unsound is failed.
func (p *pipeline) soundIfIdle(cn *conn) bool {
	if cn.idle == nil {
		return true
	}
	cn.mu.Lock()
	idle := !cn.dead && !cn.reading && cn.sent.size == 0
	cn.mu.Unlock()
	if !idle {
		return true
	}
	if err := cn.sound(); err != nil {
		p.fail(cn, err)
		return false
	}
	return true
}

// sound is idle.sound of a connection that has been idle for idleLook at
// least, and nil for one written to since.
func (cn *conn) sound() error {
	if cn.wire != nil && cn.wire.sinceWrite() < idleLook {
		return nil
	}
	return cn.idle.sound()
}

// doneWriting gives back the turn to write that a caller took (writing),
// and wakes the writer for the calls queued meanwhile.
func (p *pipeline) doneWriting() {
	p.mu.Lock()
	p.writing = false
	more := len(p.queue) > 0
	p.mu.Unlock()
	if more {
		p.signal()
	}
}
