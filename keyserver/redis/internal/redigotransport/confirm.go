package redigotransport

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"
)

// Confirmed writes, for keyserver/redis's WithWait: a write counts once
// WAIT (or WAITAOF) confirmed that the replicas have it. WAIT confirms the
// writes its own connection carried before it, so the pipeline sends it
// itself, on the connection that carried the writes, after them: a WAIT
// never answers for another connection's writes, and a connection that
// breaks before its WAIT is answered fails the writes it was to confirm,
// as it fails its unanswered calls.
//
// Group commit. Redis reads nothing more from a connection until its WAIT
// is answered, so a WAIT after every flush would line the flushes up one
// replica round trip apart, each confirming a few writes. Instead one WAIT
// at most is unanswered on a connection. The writes sent meanwhile go out
// at once (Redis runs them as soon as the WAIT ahead is answered) and join
// the Confirmation of the next WAIT, which the reader sends, with the calls
// queued by then, as soon as it has read the answer of the one ahead: no
// goroutine is woken for it (waking the writer cost each group about a
// millisecond on a loaded machine). The writes of a whole round trip share
// one WAIT.
//
// A started call (StartConfirmed) is answered once its WAIT is, from the
// goroutine that read it: its reply waits in its Confirmation, and no
// goroutine waits for either. A blocking caller (DoConfirmed) gets its
// reply at once and waits for the Confirmation's verdict.

// Confirming is what a Pipelined made to confirm writes sends after them,
// and how it reads the answer.
type Confirming struct {
	// Words are WAIT and its count, or WAITAOF and its two, without the
	// timeout, which the pipeline cuts from the deadlines of the writes.
	Words []string
	// Judge returns nil when reply, the answer of the WAIT, confirms the
	// writes, and the error of their failed votes otherwise, or when err
	// kept the answer from coming (an error reply, a lost connection).
	Judge func(reply any, err error) error
}

// Confirmation is the verdict of the WAIT (or WAITAOF) that confirms a
// group of writes sent on one connection.
type Confirmation struct {
	done    chan struct{} // closed once verdict is set
	verdict error         // nil: confirmed

	p   *pipeline
	cn  *conn
	due time.Time // the earliest deadline of its writes still to come; zero if none

	// Under cn.mu: the started calls answered, whose replies wait for the
	// verdict, and whether it has come.
	held    []heldReply
	settled bool
}

// heldReply is the reply of a started call that waits for its write's
// Confirmation.
type heldReply struct {
	to    Answerer
	reply any
}

// Wait returns the verdict once it has come (nil: confirmed), or an error
// that ends with ctx's if ctx ends first.
func (cf *Confirmation) Wait(ctx context.Context) error {
	select {
	case <-cf.done:
		return cf.verdict
	case <-ctx.Done():
		return cf.p.confirm.Judge(nil, ctx.Err())
	}
}

// Answer takes the answer of the Confirmation's WAIT, from the reader (or
// from the failure of its connection): it answers the calls it holds,
// then sends the next WAIT when writes wait for one, after the calls
// queued by then (those answers start the callers' next writes, which
// then join it).
func (cf *Confirmation) Answer(reply any, err error) {
	cn := cf.cn
	cn.mu.Lock()
	cn.waiting = false
	next := cn.conf != nil && !cn.dead
	cn.mu.Unlock()
	cf.settle(cf.p.confirm.Judge(reply, err))
	if next {
		cf.p.sendNext(cn)
	}
}

// fail ends a Confirmation whose WAIT was never sent, or never answered.
func (cf *Confirmation) fail(err error) {
	cf.settle(cf.p.confirm.Judge(nil, err))
}

// settle records the verdict and answers the started calls held.
func (cf *Confirmation) settle(verdict error) {
	cf.verdict = verdict
	cf.cn.mu.Lock()
	held := cf.held
	cf.held, cf.settled = nil, true
	cf.cn.mu.Unlock()
	close(cf.done)
	for _, h := range held {
		if verdict != nil {
			h.to.Answer(nil, verdict)
		} else {
			h.to.Answer(h.reply, nil)
		}
	}
}

// hold keeps the reply of a started call until the verdict comes, and
// reports whether it did: false once it has come, which the caller then
// passes on itself.
func (cf *Confirmation) hold(to Answerer, reply any) bool {
	cf.cn.mu.Lock()
	defer cf.cn.mu.Unlock()
	if cf.settled {
		return false
	}
	cf.held = append(cf.held, heldReply{to, reply})
	return true
}

// answerStarted answers c, a started call, with its reply: at once, or,
// for a write to confirm whose reply says it wrote (an error, or nil, as
// from a refused SET NX, says it did not), once its Confirmation's
// verdict has come.
func answerStarted(c *call, then Answerer, reply any, err error) {
	confirm, cf := c.confirm, c.conf
	putCall(c)
	switch {
	case !confirm || err != nil || reply == nil:
		then.Answer(reply, err)
	case cf == nil: // sent without a WAIT: never, but no vote if it were
		then.Answer(nil, errUnconfirmed)
	case cf.hold(then, reply):
	case cf.verdict != nil:
		then.Answer(nil, cf.verdict)
	default:
		then.Answer(reply, nil)
	}
}

// DoConfirmed runs a write as Do does, and has the pipeline follow it on
// its connection by a WAIT: the write counts once the returned
// Confirmation's verdict says so. Writes made together share it. The
// Confirmation is nil when err is not. A Pipelined made without
// Confirming runs the write unconfirmed and returns a nil Confirmation.
func (t *Pipelined) DoConfirmed(ctx context.Context, cmd, keys []string, args ...string) (any, *Confirmation, error) {
	c, ok := newCall(cmd, keys, args)
	if !ok {
		return nil, nil, errTooManyWords
	}
	confirm := t.confirm.Judge != nil
	c.confirm = confirm
	reply, conf, err := t.run(ctx, c) // which recycles c
	switch {
	case err != nil:
		return nil, nil, err
	case confirm && conf == nil: // sent without a WAIT: never, but no vote if it were
		return nil, nil, errUnconfirmed
	}
	return reply, conf, nil
}

// errUnconfirmed fails a write to confirm that went without its WAIT,
// which the pipeline never lets happen.
var errUnconfirmed = errors.New("redis: a write to confirm was sent without its WAIT")

// StartConfirmed is StartCommand for a write to confirm: to gets its reply
// once the WAIT that follows it has confirmed it, or the error of the
// Confirming's Judge in its stead; a reply that says nothing was written
// (an error, nil) comes at once.
func (t *Pipelined) StartConfirmed(cmd, keys, args []string, deadline time.Time, to Answerer) bool {
	c, ok := newCall(cmd, keys, args)
	if !ok {
		return false
	}
	c.confirm = t.confirm.Judge != nil
	return t.start(c, deadline, to)
}

// confirming makes the calls of batch that ask to be confirmed part of
// cn's next Confirmation, and returns the WAIT that sends it, to go last
// in the batch, unless one is in flight on cn already: nil when none goes
// now. Whoever sends batch on cn calls it first; on a dead cn it does
// nothing, and the send fails.
func (p *pipeline) confirming(cn *conn, batch []*call) *call {
	now := time.Now()
	cn.mu.Lock()
	defer cn.mu.Unlock()
	if cn.dead {
		return nil
	}
	for _, c := range batch {
		if !c.confirm {
			continue
		}
		cf := cn.conf
		if cf == nil {
			cf = &Confirmation{done: make(chan struct{}), p: p, cn: cn}
			cn.conf = cf
		}
		// A call whose caller is gone leaves the others their time.
		if c.due.After(now) && (cf.due.IsZero() || c.due.Before(cf.due)) {
			cf.due = c.due
		}
		c.conf = cf
	}
	cf := cn.conf
	if cf == nil || cn.waiting {
		return nil
	}
	cn.conf, cn.waiting = nil, true
	p.pending.Add(1)
	return p.waitCall(cf, now)
}

// waitCall returns the call of cf's WAIT, whose timeout is nine tenths of
// the time its writes' earliest deadline leaves, so that Redis's "too few
// replicas" comes back in time to be told from a timeout.
func (p *pipeline) waitCall(cf *Confirmation, now time.Time) *call {
	due := cf.due
	if due.IsZero() { // every caller gone: the WAIT goes all the same
		due = now.Add(time.Millisecond)
	}
	left := due.Sub(now)
	words := p.confirm.Words
	c := callPool.Get().(*call)
	c.cmd = words[0]
	n := copy(c.args[:], words[1:])
	c.args[n] = strconv.FormatInt(max((left-left/10).Milliseconds(), 1), 10)
	c.nargs, c.due, c.then = n+1, due, cf
	return c
}

// sendConfirming sends batch on cn, followed by the WAIT of the writes
// that wait for one on cn if it may go now, and returns batch, with the
// WAIT (for the caller to clear), and false when cn was found dead: the
// calls are then queued again for the next connection, and the writes
// already sent on cn fail with it. The caller holds the pipeline's
// writing.
func (p *pipeline) sendConfirming(cn *conn, batch []*call) ([]*call, bool) {
	wait := p.confirming(cn, batch)
	if wait != nil {
		batch = append(batch, wait)
	}
	if len(batch) == 0 || cn.send(batch) {
		return batch, true
	}
	if wait != nil {
		batch = batch[:len(batch)-1]
		cf := wait.then.(*Confirmation)
		p.pending.Add(-1)
		putCall(wait)
		cf.fail(fmt.Errorf("%w: the connection broke before WAIT was sent", ErrConnectionLost))
	}
	if len(batch) > 0 {
		p.requeue(batch) // it died before we wrote: send on the next one
	}
	return batch, false
}

// sendNext sends the WAIT of the writes that wait for one on cn, after
// the calls queued by then, from the reader that has just read the answer
// of the WAIT ahead of it. When someone else writes (the writer, or a
// caller inline), or cn is no longer the pipeline's, it wakes the writer
// instead.
func (p *pipeline) sendNext(cn *conn) {
	p.mu.Lock()
	if p.writing || p.cn != cn {
		p.mu.Unlock()
		p.signal()
		return
	}
	p.writing = true
	batch := p.queue
	p.queue = nil
	p.mu.Unlock()
	// A failed send leaves cn to the writer, which finds it dead.
	batch, _ = p.sendConfirming(cn, batch)
	clear(batch) // the calls are the reader's (or requeued) now
	p.doneWriting()
}

// waitDue reports whether writes sent on cn wait for a WAIT that may go
// now.
func (cn *conn) waitDue() bool {
	cn.mu.Lock()
	defer cn.mu.Unlock()
	return !cn.dead && cn.conf != nil && !cn.waiting
}

// Confirms reports whether the Pipelined was made to confirm writes.
func (t *Pipelined) Confirms() bool { return t.confirm.Judge != nil }
