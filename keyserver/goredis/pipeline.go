package goredis

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

const (
	// maxBatch bounds the commands of one pipeline; those beyond it go in
	// the next.
	maxBatch = 256
	// maxStarted bounds the commands waiting to be sent: past it, a
	// command is not started (StartCommand declines it), and its caller
	// makes it blocking.
	maxStarted = 4096
)

// pipeline sends the commands callers make while another batch is on its
// way as one go-redis pipeline: go-redis has no automatic pipelining, and
// a command of its own costs a pool checkout (with a health-check read),
// a write and a read, each a system call, where a batch of them costs one
// of each. One sender goroutine runs while commands wait, one batch at a
// time, so that what the callers make meanwhile fills the next batch.
type pipeline struct {
	c goredis.UniversalClient

	mu       sync.Mutex
	queue    []*pending
	inflight []*pending // the batch being sent
	sending  bool       // the sender runs
	closed   bool
	senders  sync.WaitGroup // the sender, for Close
}

// answerer takes the reply of a started command (see StartCommand).
type answerer = interface{ Answer(reply any, err error) }

// pending is one command, answered once: a blocking one by closing done,
// a started one by its answerer.
type pending struct {
	ctx      context.Context // a blocking command's; nil for one started
	due      time.Time       // a started command's deadline
	cmd      *goredis.Cmd
	done     chan struct{} // a blocking command's: closed once answered
	to       answerer      // a started command's
	answered atomic.Bool
	err      error // set by answer: the command failed before go-redis answered it
}

// answer answers w, unless it was answered already: with err, or else
// with its command's reply.
func (w *pending) answer(err error) {
	if !w.answered.CompareAndSwap(false, true) {
		return
	}
	w.err = err
	if w.to != nil {
		w.to.Answer(w.result())
	} else {
		close(w.done)
	}
}

// result is the Transport's reading of an answered command: nil for a
// nil reply.
func (w *pending) result() (any, error) {
	if w.err != nil {
		return nil, w.err
	}
	v, err := w.cmd.Result()
	if errors.Is(err, goredis.Nil) {
		return nil, nil
	}
	return v, err
}

// do sends words and returns the reply, or returns when ctx ends: the
// command then still goes, unless it was not sent yet.
func (p *pipeline) do(ctx context.Context, words []any) (any, error) {
	w := &pending{ctx: ctx, cmd: goredis.NewCmd(ctx, words...), done: make(chan struct{})}
	if !p.enqueue(w, false) {
		return nil, errClosed
	}
	select {
	case <-w.done:
	case <-ctx.Done():
		select {
		case <-w.done: // answered as the context ended: the answer counts
		default:
			return nil, ctx.Err()
		}
	}
	return w.result()
}

// errClosed is the error of a command made after Close.
var errClosed = errors.New("goredis: key server closed")

// start queues words for the sender, who hands the reply to to; false,
// having called nothing, once closed or when too many commands wait.
func (p *pipeline) start(words []any, due time.Time, to answerer) bool {
	return p.enqueue(&pending{due: due, cmd: goredis.NewCmd(context.Background(), words...), to: to}, true)
}

func (p *pipeline) enqueue(w *pending, bounded bool) bool {
	p.mu.Lock()
	if p.closed || bounded && len(p.queue) >= maxStarted {
		p.mu.Unlock()
		return false
	}
	p.queue = append(p.queue, w)
	start := !p.sending
	if start {
		p.sending = true
		p.senders.Add(1)
	}
	p.mu.Unlock()
	if start {
		go p.send()
	}
	return true
}

// send sends the queue's commands, batch after batch, until none wait.
func (p *pipeline) send() {
	defer p.senders.Done()
	var batch []*pending
	for {
		p.mu.Lock()
		p.inflight = nil
		if len(p.queue) == 0 {
			p.sending = false
			p.mu.Unlock()
			return
		}
		n := min(len(p.queue), maxBatch)
		batch = append(batch[:0], p.queue[:n]...)
		rest := copy(p.queue, p.queue[n:])
		clear(p.queue[rest:])
		p.queue = p.queue[:rest]
		p.inflight = batch
		p.mu.Unlock()
		p.exec(batch)
		p.mu.Lock()
		p.inflight = nil
		p.mu.Unlock()
		clear(batch)
	}
}

// exec sends batch as one pipeline, but for the commands whose callers
// have gone (their context ended, or a started command's deadline passed):
// those are not sent. The pipeline runs with the values of its first
// blocking command's context, and the latest of the commands' deadlines
// (none if one has none), never cancelled: it answers for every caller in
// it.
func (p *pipeline) exec(batch []*pending) {
	var (
		pl       goredis.Pipeliner
		values   context.Context
		deadline time.Time
		forever  bool
		now      time.Time
	)
	for _, w := range batch {
		due, ok := w.due, true
		if w.ctx != nil {
			if err := w.ctx.Err(); err != nil {
				w.answer(err)
				continue
			}
			due, ok = w.ctx.Deadline()
			if values == nil {
				values = w.ctx
			}
		} else {
			if now.IsZero() {
				now = time.Now()
			}
			if !due.After(now) {
				w.answer(context.DeadlineExceeded)
				continue
			}
		}
		if w.answered.Load() { // failed by a dial meanwhile
			continue
		}
		if pl == nil {
			pl = p.c.Pipeline()
		}
		if !ok {
			forever = true
		} else if due.After(deadline) {
			deadline = due
		}
		pl.Process(context.Background(), w.cmd) //nolint:errcheck // queues it: the error comes from Exec
	}
	if pl == nil {
		return
	}
	ctx := context.Background()
	if values != nil {
		ctx = context.WithoutCancel(values)
	}
	if !forever {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, deadline)
		defer cancel()
	}
	_, err := pl.Exec(ctx)
	for _, w := range batch {
		if w.answered.Load() {
			continue
		}
		// go-redis leaves a pipeline's commands without an error when the
		// connection's set-up failed with an error reply (a wrong
		// password): they were not sent, and fail with it.
		if err != nil && w.cmd.Err() == nil && w.cmd.Val() == nil {
			w.answer(err)
			continue
		}
		w.answer(nil)
	}
}

// failAll answers every command waiting, queued or being sent, with err:
// a dial failed while the client held no connection, so none of them can
// be sent. Those queued are not sent.
func (p *pipeline) failAll(err error) {
	p.mu.Lock()
	waiting := append(p.queue[:len(p.queue):len(p.queue)], p.inflight...)
	p.queue = nil
	p.mu.Unlock()
	for _, w := range waiting {
		w.answer(err)
	}
}

// close waits for the sender; commands made from then on fail.
func (p *pipeline) close() {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	p.senders.Wait()
}
