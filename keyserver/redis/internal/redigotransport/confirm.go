package redigotransport

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/goredlock/goredlock/keyserver"
)

// Confirmed writes, for keyserver/redis's WithWait: a write counts once
// WAIT (or WAITAOF) confirmed that the replicas have it. WAIT confirms the
// writes its own connection carried before it, so the writer sends it
// itself, on the connection that carried the writes, after them: a WAIT
// never answers for another connection's writes, and a connection that
// breaks before its WAIT is answered fails the writes it was to confirm,
// as it fails its unanswered calls.
//
// Group commit. Redis does not read a connection's next command until its
// WAIT is answered, so the writes sent while a WAIT is in flight wait in
// Redis's input buffer, and a WAIT after each flush would line the
// flushes up one replica round trip apart. The writer instead keeps at
// most maxWaits WAITs unanswered on a connection: the writes it sends
// meanwhile go out at once (Redis runs them as soon as the WAIT ahead is
// answered) and join the Confirmation of the next WAIT, which the writer
// sends as soon as the one ahead is answered (the reader wakes it). The
// writes of a whole round trip share one WAIT, and the WAIT goes out
// without waiting for their callers to read their replies.

// maxWaits is how many WAITs may be unanswered on one connection. One:
// Redis holds the connection's later commands until a WAIT is answered,
// so a second one sent meanwhile would confirm only what was sent before
// it, and the writes that follow it would wait for a third; with one, a
// write waits at most for the WAIT ahead and then its own.
const maxWaits = 1

// Confirmation is the answer of the WAIT (or WAITAOF) that confirms a
// group of writes sent together on one connection.
type Confirmation struct {
	done  chan struct{} // closed once reply and err hold the answer
	reply any
	err   error

	p     *pipeline
	cn    *conn
	words []string  // the command, without its timeout
	due   time.Time // the earliest deadline of its writes still to come; zero if none
}

// Wait returns the WAIT's reply once it is answered, or the error that
// ended it (the connection lost, an error reply); ctx's error if ctx ends
// first.
func (cf *Confirmation) Wait(ctx context.Context) (any, error) {
	select {
	case <-cf.done:
		return cf.reply, cf.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Answer takes the reply of the Confirmation's WAIT, from the reader (or
// from the failure of its connection), and wakes the writer when writes
// wait for the next WAIT.
func (cf *Confirmation) Answer(reply any, err error) {
	cf.reply, cf.err = reply, err
	cn := cf.cn
	cn.mu.Lock()
	cn.waits--
	next := cn.conf != nil
	cn.mu.Unlock()
	close(cf.done)
	if next {
		cf.p.signal()
	}
}

// fail ends a Confirmation whose WAIT was never sent.
func (cf *Confirmation) fail(err error) {
	cf.err = err
	close(cf.done)
}

// DoConfirmed runs the command as Do does, and has the writer follow it
// on its connection by confirm (WAIT and its count, or WAITAOF and its
// two) with a timeout cut from the earliest deadline of the writes it
// confirms. The write counts once the returned Confirmation answers;
// calls made together share it. The Confirmation is nil when err is not.
func (t *Pipelined) DoConfirmed(ctx context.Context, confirm []string, cmd, keys []string, args ...string) (any, *Confirmation, error) {
	if len(confirm) == 0 || len(confirm) > maxArgs {
		return nil, nil, fmt.Errorf("%w: a confirmation of %d words", keyserver.ErrInvalidArgument, len(confirm))
	}
	c, ok := newCall(cmd, keys, args)
	if !ok {
		return nil, nil, fmt.Errorf("%w: a command of more than %d words", keyserver.ErrInvalidArgument, maxArgs+1)
	}
	c.confirm = confirm
	reply, conf, err := t.run(ctx, c)
	if err != nil {
		return nil, nil, err
	}
	return reply, conf, nil
}

// confirming makes the calls of batch that ask to be confirmed part of
// cn's next Confirmation, and returns the WAIT that sends it, to go last
// in the batch, if fewer than maxWaits are unanswered on cn; nil when
// none goes now. The writer calls it before it sends batch on cn: on a
// dead cn it does nothing, and the send fails.
func (p *pipeline) confirming(cn *conn, batch []*call) *call {
	now := time.Now()
	cn.mu.Lock()
	defer cn.mu.Unlock()
	if cn.dead {
		return nil
	}
	for _, c := range batch {
		if c.confirm == nil {
			continue
		}
		cf := cn.conf
		if cf == nil {
			cf = &Confirmation{done: make(chan struct{}), p: p, cn: cn, words: c.confirm}
			cn.conf = cf
		}
		// A call whose caller is gone leaves the others their time.
		if c.due.After(now) && (cf.due.IsZero() || c.due.Before(cf.due)) {
			cf.due = c.due
		}
		c.conf = cf
	}
	cf := cn.conf
	if cf == nil || cn.waits >= maxWaits {
		return nil
	}
	cn.conf = nil
	cn.waits++
	p.pending.Add(1)
	return cf.command(now)
}

// waitDue reports whether writes sent on cn wait for a WAIT that may go
// now.
func (cn *conn) waitDue() bool {
	cn.mu.Lock()
	defer cn.mu.Unlock()
	return !cn.dead && cn.conf != nil && cn.waits < maxWaits
}

// command returns the call of cf's WAIT, whose timeout is nine tenths of
// the time its writes' earliest deadline leaves, so that Redis's "too few
// replicas" comes back in time to be told from a timeout.
func (cf *Confirmation) command(now time.Time) *call {
	due := cf.due
	if due.IsZero() { // every caller gone: the WAIT goes all the same
		due = now.Add(time.Millisecond)
	}
	left := due.Sub(now)
	c := callPool.Get().(*call)
	c.cmd = cf.words[0]
	n := copy(c.args[:], cf.words[1:])
	c.args[n] = strconv.FormatInt(max((left-left/10).Milliseconds(), 1), 10)
	c.nargs, c.due, c.then = n+1, due, cf
	return c
}

// unsent takes back wait, a WAIT from confirming that its connection,
// found dead, did not send, and fails its Confirmation: the writes of it
// already sent went on a connection that is gone. Those not sent yet go
// to the next connection, and join a Confirmation there.
func (p *pipeline) unsent(wait *call) {
	cf := wait.then.(*Confirmation)
	p.pending.Add(-1)
	putCall(wait)
	cf.fail(fmt.Errorf("%w: the connection broke before WAIT was sent", ErrConnectionLost))
}
