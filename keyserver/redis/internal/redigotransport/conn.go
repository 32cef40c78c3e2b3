package redigotransport

import (
	"fmt"
	"runtime"
	"sync"
	"time"

	redigo "github.com/gomodule/redigo/redis"
)

// conn is one pipelined connection. The pipeline's writer pushes each call
// on sent just before writing it, and the connection's reader pops one call
// per reply: Redis answers in order, so the oldest unanswered call owns the
// next reply, whether or not its caller still waits for it.
//
// redigo allows one goroutine in Send and Flush and another in Receive on
// the same connection. Sending is the writer's, or that of a caller that
// found the connection idle (see inline.go); reading is the role of one
// goroutine at a time: the connection's reader, or that caller.
type conn struct {
	rc   redigo.Conn
	down chan struct{} // closed when the reader has failed every call and returned

	// wire, when not nil, writes the calls on the plain connection beneath
	// rc (see wire.go); nil: they go through redigo's Send, with args as
	// the scratch of their words.
	wire *wire
	args [maxArgs]any
	// words and counts hold a batch's commands (name, then arguments) and
	// their argument counts for redigo's Send, read before the calls are
	// pushed (see send); kept between batches.
	words  []string
	counts []int

	// idle, when not nil, lets a caller find the connection idle and make
	// its call inline (see inline.go); nil for a connection whose reader
	// reads at all times (TLS, or one dialed by the caller's dial options).
	idle *idleWatch
	// turn gives the reading role to the reader, which waits for it while
	// the connection is idle or a caller reads inline; the reader also
	// takes it to notice that the connection failed.
	turn chan struct{}

	// wmu is held by the writer while it pushes and writes a batch. The
	// reader takes it before it fails the calls of a broken connection, so
	// that it never hands a call back while the writer still reads it.
	wmu sync.Mutex

	mu      sync.Mutex
	sent    fifo  // written (or being written), not yet answered
	reading bool  // someone holds the reading role
	dead    bool  // the reader gave up: nothing more may be pushed
	reason  error // why the writer closed the connection, if it did
	// conf is the Confirmation of the writes sent and not yet followed by
	// a WAIT, and waiting says that a WAIT is in flight (see confirm.go).
	conf    *Confirmation
	waiting bool
}

// newConn returns a pipelined connection over rc; idle and w as for
// conn.idle and conn.wire.
func newConn(rc redigo.Conn, idle *idleWatch, w *wire) *conn {
	// Without an idle watch the reader reads at all times, as it must to
	// notice a server that closes an idle connection.
	return &conn{rc: rc, idle: idle, wire: w, down: make(chan struct{}), turn: make(chan struct{}, 1), reading: idle == nil}
}

// pass gives the reading role to the reader.
func (cn *conn) pass() {
	select {
	case cn.turn <- struct{}{}:
	default: // it has been told already
	}
}

// pushLocked pushes c and reports whether the reader must be given the
// reading role, which nobody held. cn.mu must be held.
func (cn *conn) pushLocked(c *call) bool {
	cn.sent.push(c)
	if cn.reading {
		return false
	}
	cn.reading = true
	return true
}

// send pushes batch and writes it in one flush. It returns false, having
// written nothing, when the connection is already dead. A write error
// closes the connection, and the reader then fails what was pushed.
func (cn *conn) send(batch []*call) bool {
	cn.wmu.Lock()
	defer cn.wmu.Unlock()
	// The calls are read before they are pushed: once pushed, a reply
	// (from a server that answers before it is asked, or garbage: found
	// by FuzzPipelineReplies under -race) may hand one back to its caller,
	// who recycles it while it would still be read here.
	var encoded []byte
	words, counts := cn.words[:0], cn.counts[:0]
	if cn.wire != nil {
		encoded = cn.wire.encode(batch)
	} else {
		for _, c := range batch {
			words = append(append(words, c.cmd), c.args[:c.nargs]...)
			counts = append(counts, c.nargs)
		}
		defer func(all []string) { clear(all); cn.words, cn.counts = all[:0], counts[:0] }(words)
	}
	cn.mu.Lock()
	if cn.dead {
		cn.mu.Unlock()
		return false
	}
	pass := false
	for _, c := range batch {
		pass = cn.pushLocked(c) || pass
	}
	cn.mu.Unlock()
	if pass {
		cn.pass()
	}
	if cn.wire != nil {
		if cn.wire.flush(encoded) != nil {
			cn.rc.Close() //nolint:errcheck // the reader's read fails, and it fails the calls
		}
		return true
	}
	for _, n := range counts {
		for i, w := range words[1 : 1+n] {
			cn.args[i] = w
		}
		err := cn.rc.Send(words[0], cn.args[:n]...)
		clear(cn.args[:n])
		words = words[1+n:]
		if err != nil {
			return true // redigo closed the connection; the reader fails the calls
		}
	}
	cn.rc.Flush() //nolint:errcheck // as above
	return true
}

// close closes the connection for reason, which the reader reports to the
// calls left unanswered instead of the read error the close causes.
func (cn *conn) close(reason error) {
	cn.mu.Lock()
	if cn.reason == nil {
		cn.reason = reason
	}
	pass := !cn.reading // an idle connection's reader waits for its turn
	cn.reading = true
	cn.mu.Unlock()
	cn.rc.Close() //nolint:errcheck // the reader reports reason
	if pass {
		cn.pass()
	}
}

// overdue closes the connection when its oldest unanswered call is more
// than limit past its deadline, and otherwise returns when to look again:
// zero when nothing is unanswered.
func (cn *conn) overdue(now time.Time, limit time.Duration) time.Duration {
	cn.mu.Lock()
	oldest := cn.sent.peek()
	var due time.Time
	if oldest != nil {
		due = oldest.due // under mu: once popped, the call is recycled
	}
	cn.mu.Unlock()
	if oldest == nil {
		return 0
	}
	if late := due.Add(limit).Sub(now); late > 0 {
		return late
	}
	cn.close(fmt.Errorf("%w: no reply for %v past a call's deadline, so the connection was closed", ErrConnectionLost, limit))
	return 0
}

// read hands each reply to the oldest unanswered call until the connection
// fails, then fails the calls left. On a connection with an idle watch it
// reads only while it holds the reading role: from its turn until no call
// is left unanswered.
func (p *pipeline) read(cn *conn) {
	defer p.wg.Done()
	defer close(cn.down)
	for {
		if cn.idle != nil {
			<-cn.turn
			cn.mu.Lock()
			dead := cn.dead
			cn.mu.Unlock()
			if dead {
				return // a caller reading inline failed the connection
			}
		}
		if !p.readUntilIdle(cn, 0) {
			return
		}
	}
}

// readUntilIdle reads replies and hands each to its call until none is left
// unanswered (for ever on a connection without an idle watch), giving the
// reading role up then. timeout bounds each read (0: no bound). It returns
// false when the connection failed.
func (p *pipeline) readUntilIdle(cn *conn, timeout time.Duration) bool {
	for {
		// No read deadline: a connection without an idle watch waits here
		// while idle, so a server that closes it (a restart, its idle
		// timeout) is noticed at once. The writer's watchdog bounds the
		// wait while calls are unanswered.
		reply, err := redigo.ReceiveWithTimeout(cn.rc, timeout)
		if _, isReply := err.(redigo.Error); err != nil && !isReply { // an error reply: the command failed, not the connection
			p.fail(cn, err)
			return false
		}
		cn.mu.Lock()
		c := cn.sent.pop()
		idle := cn.idle != nil && cn.sent.size == 0
		cn.mu.Unlock()
		if c == nil {
			p.fail(cn, fmt.Errorf("a reply with no call waiting for it: %v", reply))
			return false
		}
		p.answer(c, reply, err)
		if idle && p.letGo(cn) {
			return true
		}
	}
}

// letGo gives the reading role up once the connection is idle, and
// reports whether it did. Under load the callers just answered call again
// at once: they run first, and find the role held, so that their calls
// queue for the writer's next batch rather than each going inline.
func (p *pipeline) letGo(cn *conn) bool {
	runtime.Gosched()
	cn.mu.Lock()
	if cn.sent.size > 0 {
		cn.mu.Unlock()
		return false
	}
	pass := cn.releaseLocked()
	cn.mu.Unlock()
	if pass {
		cn.pass()
	}
	return true
}

// releaseLocked gives the reading role of an idle connection up, and
// reports whether it must be passed to the reader instead: the writer
// closed the connection while the role was held, and the reader must read
// to find that out, fail it and return. cn.mu must be held.
func (cn *conn) releaseLocked() (pass bool) {
	if cn.reason != nil {
		return true
	}
	cn.reading = false
	return false
}

// answer settles c with its reply.
func (p *pipeline) answer(c *call, reply any, err error) {
	if err == nil {
		reply, err = normalize(reply)
	}
	p.settle(c, reply, err)
}

// fail closes a broken connection and fails every call it had sent.
func (p *pipeline) fail(cn *conn, err error) {
	cn.rc.Close() //nolint:errcheck // already failed; this unblocks the writer
	cn.wmu.Lock()
	cn.mu.Lock()
	cn.dead = true
	if cn.reason != nil {
		err = cn.reason
	} else {
		err = fmt.Errorf("%w: %w", ErrConnectionLost, err)
	}
	var lost []*call
	for c := cn.sent.pop(); c != nil; c = cn.sent.pop() {
		lost = append(lost, c)
	}
	unconfirmed := cn.conf // writes no WAIT was sent for
	cn.conf = nil
	cn.mu.Unlock()
	cn.wmu.Unlock()
	cn.pass() // a reader waiting for its turn returns
	for _, c := range lost {
		p.settle(c, nil, err)
	}
	if unconfirmed != nil {
		unconfirmed.fail(err)
	}
}
