package redigotransport

import (
	"cmp"
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	redigo "github.com/gomodule/redigo/redis"

	"github.com/goredlock/goredlock/keyserver"
)

// The pipelined mode, FromURL's default: every call of a Server shares one
// connection. Callers queue their calls; one writer goroutine takes
// whatever is queued, writes it and flushes once, and one reader goroutine
// hands the replies back in order. Under load a single write and a single
// read carry many calls; a call alone on an idle connection is made inline
// by its caller (see inline.go), and costs one round trip as on a pooled
// connection.

const (
	// overdueLimit is how long past the deadline of its oldest unanswered
	// call a pipelined connection is given before it is closed and
	// replaced. A server that answers late still answers in order, so a
	// late reply is read and dropped; only a link that stays silent this
	// long (a black hole, a server paused for seconds) is given up on.
	overdueLimit = 5 * time.Second
)

// pipeline is the pipelined mode: every call over one connection.
type pipeline struct {
	dial        func(context.Context) (redigo.Conn, error)
	inlined     bool // dial leaves a plain network connection in a netConnBox
	maxPending  int64
	overdue     time.Duration
	dialTimeout time.Duration // bound on opening a connection
	callTimeout time.Duration // bound on a call whose context has no deadline
	confirm     Confirming    // the WAIT that confirms writes, if any

	pending atomic.Int64                 // calls queued, sent or unanswered: abandoned ones too
	dials   atomic.Int64                 // connections opened
	dialing atomic.Pointer[dialProgress] // while the writer opens a connection

	mu    sync.Mutex
	queue []*call       // waiting for the writer, in call order
	wake  chan struct{} // tells the writer the queue is not empty
	// cn is the writer's connection, which a caller may find idle and
	// use inline; nil while there is none. writing is held by whoever
	// writes on it (the writer, or a caller inline), so that calls are
	// written in the order they were taken.
	cn      *conn
	writing bool

	writer sync.Once // starts the writer with the first call
	ctx    context.Context
	cancel context.CancelFunc // ends the writer and a dial in progress
	wg     sync.WaitGroup     // the writer and the connections' readers

	expiry expiry // ends the waits of callers whose context has no timer
}

// settings are what a pipeline is made with.
type settings struct {
	maxPending int // calls held at once: keyserver/redis's WithMaxPending
	// dialTimeout bounds opening a connection, and callTimeout a call
	// whose context has no deadline (0: the defaults of FromURL's URL).
	dialTimeout, callTimeout time.Duration
	// inline: FromURL's own dialer makes the connections (no dial options
	// of the caller's), so calls may be made inline.
	inline bool
	// confirm is the WAIT of the writes to confirm (zero: none).
	confirm Confirming
}

func newPipeline(dial func(context.Context) (redigo.Conn, error), c settings) *pipeline {
	p := &pipeline{dial: dial, inlined: c.inline, maxPending: int64(c.maxPending), overdue: overdueLimit, wake: make(chan struct{}, 1),
		dialTimeout: cmp.Or(c.dialTimeout, connectTimeout), callTimeout: cmp.Or(c.callTimeout, ioTimeoutNoCtx), confirm: c.confirm}
	p.ctx, p.cancel = context.WithCancel(context.Background())
	return p
}

// Do runs one command on the pipelined connection.
func (p *pipeline) Do(ctx context.Context, cmd, keys []string, args ...string) (any, error) {
	c, ok := newCall(cmd, keys, args)
	if !ok {
		return nil, errTooManyWords
	}
	reply, _, err := p.run(ctx, c)
	return reply, err
}

// errTooManyWords is the error of a command of more words than a call holds.
var errTooManyWords = fmt.Errorf("%w: a command of more than %d words", keyserver.ErrInvalidArgument, maxArgs+1)

// run queues c, a call from getCall, waits for its reply and recycles it.
// A caller whose context ends first returns at once (within inlineWait
// when the call is made inline); its call still runs, and its reply is
// read and dropped. A call to be confirmed (c.confirm) returns the
// Confirmation of its write along with its reply.
func (p *pipeline) run(ctx context.Context, c *call) (any, *Confirmation, error) {
	if p.pending.Add(1) > p.maxPending {
		p.pending.Add(-1)
		putCall(c)
		return nil, nil, ErrOverloaded
	}
	p.startWriter()
	d, ok := ctx.Deadline()
	if !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, p.callTimeout)
		defer cancel()
		d, _ = ctx.Deadline()
	}
	c.due = d
	made, answered := false, false
	if !c.confirm { // a write to confirm goes with its WAIT, which is not made inline
		made, answered = p.inline(c)
	}
	if answered {
		return c.take()
	}
	var (
		parentDone <-chan struct{}
		unarmed    bool
	)
	if l, ok := ctx.(lazyContext); ok {
		parentDone, unarmed = l.Unarmed()
	}
	if unarmed {
		p.expiry.add(c)
	}
	if !made {
		p.mu.Lock()
		p.queue = append(p.queue, c)
		p.mu.Unlock()
		p.signal()
	}
	if unarmed {
		return p.await(ctx, c, parentDone)
	}

	select {
	case <-c.done:
	case <-ctx.Done():
		if c.state.CompareAndSwap(waiting, abandoned) {
			return nil, nil, p.gaveUp(ctx) // the reader recycles c when its reply comes
		}
		<-c.done // answered as the context ended: take the answer
	}
	return c.take()
}

// await waits for the reply of c, which the expiry watches, and recycles
// it: the expiry ends the wait at the deadline, and parentDone (nil if
// none) when the caller's context is cancelled.
func (p *pipeline) await(ctx context.Context, c *call, parentDone <-chan struct{}) (any, *Confirmation, error) {
	if parentDone == nil {
		<-c.done
	} else {
		select {
		case <-c.done:
		case <-parentDone:
			p.expiry.remove(c)
			if c.state.CompareAndSwap(waiting, abandoned) {
				return nil, nil, p.gaveUp(ctx)
			}
			<-c.done // answered, or expired, as the context ended
		}
	}
	if c.state.CompareAndSwap(overDeadline, abandoned) {
		return nil, nil, p.gaveUp(ctx) // the reader recycles c when its reply comes
	}
	// Answered, or answered late: the reply came while the expiry ended
	// the wait, and the reader left c to its caller.
	p.expiry.remove(c)
	return c.take()
}

// gaveUp is the error of a caller whose context ended before its reply
// came.
func (p *pipeline) gaveUp(ctx context.Context) error {
	err := ctx.Err()
	if err == nil { // the expiry's: ctx ends by the same deadline
		err = context.DeadlineExceeded
	}
	if prog := p.dialing.Load(); prog != nil { // say why nothing answered
		return prog.stalled(err)
	}
	return err
}

// start queues c, a call from newCall, for the writer, with due as its
// deadline, and hands its reply to then instead of waiting for it: then
// gets exactly one reply or error, from the goroutine that settles c, once
// start has returned true. It returns false, having queued nothing, when
// the pipeline holds its maximum of calls already. A started call is never
// made inline: its caller does not wait on the connection.
func (p *pipeline) start(c *call, due time.Time, then Answerer) bool {
	if p.pending.Add(1) > p.maxPending {
		p.pending.Add(-1)
		putCall(c)
		return false
	}
	p.startWriter()
	c.due, c.then = due, then
	p.mu.Lock()
	p.queue = append(p.queue, c)
	p.mu.Unlock()
	p.signal()
	return true
}

// startWriter starts the writer with the first call.
func (p *pipeline) startWriter() {
	p.writer.Do(func() {
		p.wg.Add(1)
		go p.write()
	})
}

// signal tells the writer to look at the queue and the watchdog.
func (p *pipeline) signal() {
	select {
	case p.wake <- struct{}{}:
	default: // the writer has been told already
	}
}

// setConn records the writer's connection.
func (p *pipeline) setConn(cn *conn) {
	p.mu.Lock()
	p.cn = cn
	p.mu.Unlock()
}

// settle answers c, a call of a caller, with n or err.
func (p *pipeline) settle(c *call, reply any, err error) {
	p.pending.Add(-1)
	c.finish(reply, err)
}

// requeue puts calls back at the head of the queue, ahead of later calls.
func (p *pipeline) requeue(calls []*call) {
	p.mu.Lock()
	q := make([]*call, 0, len(calls)+len(p.queue))
	p.queue = append(append(q, calls...), p.queue...)
	p.mu.Unlock()
	p.signal()
}

// write is the writer: it opens a connection when there is something to
// send and none is open, writes whatever is queued in one flush, and
// watches the oldest unanswered call so that a silent connection is closed
// overdueLimit after that call's deadline.
func (p *pipeline) write() {
	defer p.wg.Done()
	var (
		cn      *conn
		batch   []*call
		watch   = time.NewTimer(time.Hour)
		armed   bool
		armedAt time.Time
	)
	watch.Stop()
	defer watch.Stop()
	for {
		var down <-chan struct{}
		if cn != nil {
			down = cn.down
		}
		select {
		case <-p.ctx.Done():
			if cn != nil {
				cn.close(ErrClosed)
			}
			p.setConn(nil)
			p.mu.Lock()
			batch, p.queue = p.queue, nil
			p.mu.Unlock()
			for _, c := range batch {
				p.settle(c, nil, ErrClosed)
			}
			return
		case <-down:
			cn = nil // its reader has failed its calls
			p.setConn(nil)
		case <-watch.C:
			armed = false
		case <-p.wake:
		}

		// Let the callers that are ready to run queue their calls first: the
		// reader has just woken the callers of a batch of replies, and most
		// make their next call at once. With 64 callers on one local node
		// this took a flush from 1.7 calls to 28, and ops/s up by half.
		runtime.Gosched()
		p.mu.Lock()
		mine := false
		if !p.writing { // else a caller writes inline, and signals when done
			batch, p.queue = p.queue, batch
			// Or no call, but writes waiting for a WAIT that may go now.
			mine = len(batch) > 0 || cn != nil && cn.waitDue()
			p.writing = mine
		}
		p.mu.Unlock()
		if mine {
			if len(batch) > 0 && cn != nil && !p.soundIfIdle(cn) {
				cn = nil
			}
			if len(batch) > 0 && cn == nil {
				var err error
				prog := new(dialProgress)
				p.dialing.Store(prog)
				cn, err = p.connect(prog)
				p.dialing.Store(nil)
				if err != nil {
					for _, c := range batch {
						p.settle(c, nil, err)
					}
				}
			}
			if cn != nil {
				var alive bool
				if batch, alive = p.sendConfirming(cn, batch); !alive {
					cn = nil
				}
			}
			clear(batch)
			p.mu.Lock()
			p.cn, p.writing = cn, false
			p.mu.Unlock()
		}
		batch = batch[:0]

		if cn != nil {
			now := time.Now()
			if wait := cn.overdue(now, p.overdue); wait > 0 && (!armed || now.Add(wait).Before(armedAt)) {
				watch.Reset(wait)
				armed, armedAt = true, now.Add(wait)
			}
		}
	}
}

// connect opens a connection and starts its reader. The dial, if it is
// FromURL's, tells prog how far it got.
func (p *pipeline) connect(prog *dialProgress) (*conn, error) {
	ctx, cancel := context.WithTimeout(p.ctx, p.dialTimeout)
	defer cancel()
	ctx = context.WithValue(ctx, dialProgressKey{}, prog)
	box := &netConnBox{}
	if p.inlined {
		ctx = context.WithValue(ctx, netConnKey{}, box)
	}
	rc, err := p.dial(ctx)
	if err != nil {
		return nil, connecting(err)
	}
	p.dials.Add(1)
	var (
		idle *idleWatch
		w    *wire
	)
	if box.conn != nil {
		idle = newIdleWatch(box.conn, box.guard)
		w = &wire{nc: box.conn, timeout: box.writeTimeout}
	}
	cn := newConn(rc, idle, w)
	p.wg.Add(1)
	go p.read(cn)
	return cn, nil
}

// stop ends the writer, closes the connection and waits for both
// goroutines. Calls still queued fail with ErrClosed.
func (p *pipeline) stop() {
	p.cancel()
	p.wg.Wait()
	p.expiry.stop()
}
