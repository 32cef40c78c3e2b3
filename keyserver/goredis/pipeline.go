package goredis

import (
	"context"
	"errors"
	"sync"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

// maxBatch bounds the commands of one pipeline; those beyond it go in the
// next.
const maxBatch = 256

// pipeline sends the commands callers make while another batch is on its
// way as one go-redis pipeline: go-redis has no automatic pipelining, and
// a command of its own costs a pool checkout (with a health-check read),
// a write and a read, each a system call, where a batch of them costs one
// of each. One sender goroutine runs while commands wait, one batch at a
// time, so that what the callers make meanwhile fills the next batch.
type pipeline struct {
	c goredis.UniversalClient
	// dials, when the client's dials are hooked, tells of a failed dial:
	// the callers then fail at once with its error.
	dials *dialWatch

	mu      sync.Mutex
	queue   []*pending
	sending bool           // the sender runs
	senders sync.WaitGroup // the sender, for Close
}

// pending is one caller's command, answered once done is closed.
type pending struct {
	ctx  context.Context
	cmd  *goredis.Cmd
	done chan struct{}
}

// do sends words and returns the reply, or returns when ctx ends (the
// command then still goes, if not sent yet and ctx has ended by then, it
// does not), or when a dial of the client failed while it had no
// connection: a Redis that refuses connections fails the call with the
// dial's error ("connection refused"), not after go-redis's own retries
// by the end of ctx.
func (p *pipeline) do(ctx context.Context, words []any) (any, error) {
	var failed <-chan struct{}
	if p.dials != nil {
		failed = p.dials.next()
	}
	w := &pending{ctx: ctx, cmd: goredis.NewCmd(ctx, words...), done: make(chan struct{})}
	p.mu.Lock()
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
	for {
		select {
		case <-w.done:
			return reply(w.cmd)
		case <-ctx.Done():
			select {
			case <-w.done: // answered as the context ended: the answer counts
				return reply(w.cmd)
			default:
				return nil, ctx.Err()
			}
		case <-failed:
			if err, down := p.dials.down(); down {
				return nil, err
			}
			failed = p.dials.next()
		}
	}
}

// reply is the Transport's reading of an answered command: nil for a nil
// reply.
func reply(cmd *goredis.Cmd) (any, error) {
	v, err := cmd.Result()
	if errors.Is(err, goredis.Nil) {
		return nil, nil
	}
	return v, err
}

// send sends the queue's commands, batch after batch, until none wait.
func (p *pipeline) send() {
	defer p.senders.Done()
	var batch []*pending
	for {
		p.mu.Lock()
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
		p.mu.Unlock()
		p.exec(batch)
		clear(batch)
	}
}

// exec sends batch as one pipeline, but for the commands whose callers
// have gone (their context ended): those are not sent. The pipeline runs
// with the values of its first command's context, and the latest of the
// commands' deadlines (none if one has none), never cancelled: it answers
// for every caller in it.
func (p *pipeline) exec(batch []*pending) {
	var (
		pl       goredis.Pipeliner
		first    context.Context
		deadline time.Time
		forever  bool
	)
	for _, w := range batch {
		if err := w.ctx.Err(); err != nil {
			w.cmd.SetErr(err)
			close(w.done)
			continue
		}
		if first == nil {
			first, pl = w.ctx, p.c.Pipeline()
		}
		if d, ok := w.ctx.Deadline(); !ok {
			forever = true
		} else if d.After(deadline) {
			deadline = d
		}
		pl.Process(first, w.cmd) //nolint:errcheck // queues it: the error comes from Exec
	}
	if first == nil {
		return
	}
	ctx := context.WithoutCancel(first)
	if !forever {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, deadline)
		defer cancel()
	}
	_, err := pl.Exec(ctx)
	for _, w := range batch {
		select {
		case <-w.done: // not sent
			continue
		default:
		}
		// go-redis leaves a pipeline's commands without an error when the
		// connection's set-up failed with an error reply (a wrong
		// password): they were not sent, and fail with it.
		if err != nil && w.cmd.Err() == nil && w.cmd.Val() == nil {
			w.cmd.SetErr(err)
		}
		close(w.done)
	}
}

// close waits for the sender.
func (p *pipeline) close() { p.senders.Wait() }
