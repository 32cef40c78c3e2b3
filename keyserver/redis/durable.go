package redis

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/goredlock/goredlock/keyserver"
)

// WithWait makes a write count as a vote only once WAIT confirmed that
// replicas replicas have it, within the call's deadline: for a key server
// that is a replicated deployment (Sentinel, a managed service with
// replicas), whose failover would otherwise promote a replica without a
// grant it acknowledged. A timeout or fewer acknowledgements fail the
// vote, and the client undoes the write like any failed vote. Grants,
// extensions, fences and the primitives' holds wait; releases do not.
// Calls made together share one WAIT ("Durable votes" in docs/design.md).
// FromURL only, in its pipelined mode (see NewServer): WAIT covers the
// writes of its own connection, and a pipelined Server has one. The URL's
// wait=N sets it.
func WithWait(replicas int) Option {
	return func(c *config) { c.wait = &durability{replicas: replicas} }
}

// WithWaitAOF is WithWait with WAITAOF (Redis 7.2 and later, Valkey): a
// write is a vote once local (0 or 1) is the number of servers that have
// fsynced it to their append-only file among this one, and replicas among
// its replicas. The URL's waitaof=L,N sets it.
func WithWaitAOF(local, replicas int) Option {
	return func(c *config) { c.wait = &durability{aof: true, local: local, replicas: replicas} }
}

// durability is a Server's WithWait or WithWaitAOF, and its group commit:
// the writes whose callers ask at the same time share one WAIT, and at
// most one WAIT is in flight, the next one sent once it is answered.
type durability struct {
	aof             bool
	local, replicas int
	refused         error // why this Server cannot wait: every write fails with it

	mu       sync.Mutex
	inflight *confirmation // the WAIT sent and not yet answered
	next     *confirmation // the WAIT the writes answered since then wait for
}

// confirmation is one WAIT: done is closed once err holds its verdict,
// and dials the transport's connections opened when it was answered.
type confirmation struct {
	done  chan struct{}
	err   error
	dials int64
}

// errNotDurable is the error of a write not confirmed by the replicas.
var errNotDurable = errors.New("write not confirmed")

// check reports bad settings.
func (d *durability) check() error {
	switch {
	case !d.aof && d.replicas < 1:
		return fmt.Errorf("%w: wait %d: at least one replica must confirm", keyserver.ErrInvalidArgument, d.replicas)
	case d.aof && (d.local < 0 || d.local > 1 || d.replicas < 0 || d.local+d.replicas == 0):
		return fmt.Errorf("%w: waitaof %d,%d: the local count is 0 or 1, the replicas' 0 or more, not both 0", keyserver.ErrInvalidArgument, d.local, d.replicas)
	}
	return nil
}

// connected returns how many connections the transport has opened, once
// one is open, before a write that durably will confirm: a WAIT on a
// connection other than the write's confirms nothing, so a connection
// opened in between fails the vote.
// A Server that cannot wait fails here, before it writes.
func (s *Server) connected(ctx context.Context, op, key string) (int64, error) {
	if s.wait.refused != nil {
		return 0, s.fail(op, key, s.wait.refused)
	}
	if n, _ := s.dials(); n > 0 {
		return n, nil
	}
	s.t.Do(ctx, []string{"PING"}, nil) //nolint:errcheck // the write that follows reports a failure
	n, _ := s.dials()
	return n, nil
}

// durably waits, after a write of the Server's sent on the connection
// that connected counted (dials), for the replicas to confirm it.
func (s *Server) durably(ctx context.Context, op, key string, dials int64) error {
	d := s.wait
	d.mu.Lock()
	if d.next == nil {
		d.next = &confirmation{done: make(chan struct{})}
	}
	c := d.next
	for d.inflight != nil && d.next == c {
		// A WAIT sent before this write was answered may not cover it.
		wait := d.inflight.done
		d.mu.Unlock()
		select {
		case <-wait:
		case <-ctx.Done():
			return s.fail(op, key, fmt.Errorf("%w: %w", errNotDurable, ctx.Err()))
		}
		d.mu.Lock()
	}
	if d.next == c { // nobody sent it yet: this caller does, for all
		d.next, d.inflight = nil, c
		d.mu.Unlock()
		c.err = s.waitReplicas(ctx)
		c.dials, _ = s.dials()
		d.mu.Lock()
		d.inflight = nil
		d.mu.Unlock()
		close(c.done)
	} else {
		d.mu.Unlock()
	}
	select {
	case <-c.done:
		if c.err == nil && c.dials != dials {
			return s.fail(op, key, fmt.Errorf("%w: the connection that carried it was replaced before WAIT", errNotDurable))
		}
		if c.err != nil {
			return s.fail(op, key, c.err)
		}
		return nil
	case <-ctx.Done():
		return s.fail(op, key, fmt.Errorf("%w: %w", errNotDurable, ctx.Err()))
	}
}

// waitReplicas sends one WAIT or WAITAOF, bounded by ctx's deadline but
// not ended by its cancellation (it answers for other callers too), and
// judges its reply.
func (s *Server) waitReplicas(ctx context.Context) error {
	d := s.wait
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(5 * time.Second)
	}
	left := time.Until(deadline)
	if left < time.Millisecond {
		return fmt.Errorf("%w: no time left to wait for the replicas", errNotDurable)
	}
	wctx, cancel := context.WithDeadline(context.WithoutCancel(ctx), deadline)
	defer cancel()
	// Redis's timeout is the bound on its side, a little shorter than
	// ours so that its answer arrives in time.
	timeout := strconv.FormatInt(max((left-left/10).Milliseconds(), 1), 10)
	var (
		reply any
		err   error
	)
	if d.aof {
		reply, err = s.t.Do(wctx, []string{"WAITAOF"}, nil, strconv.Itoa(d.local), strconv.Itoa(d.replicas), timeout)
	} else {
		reply, err = s.t.Do(wctx, []string{"WAIT"}, nil, strconv.Itoa(d.replicas), timeout)
	}
	if err != nil {
		return fmt.Errorf("%w: %w", errNotDurable, err)
	}
	switch r := reply.(type) {
	case int64:
		if !d.aof && r >= int64(d.replicas) {
			return nil
		}
		return fmt.Errorf("%w: %d of %d replicas acknowledged it in time", errNotDurable, r, d.replicas)
	case []any:
		if len(r) == 2 {
			local, _ := r[0].(int64)
			replicas, _ := r[1].(int64)
			if local >= int64(d.local) && replicas >= int64(d.replicas) {
				return nil
			}
			return fmt.Errorf("%w: fsynced locally %d (want %d), by %d of %d replicas in time", errNotDurable, local, d.local, replicas, d.replicas)
		}
	}
	return fmt.Errorf("%w: unexpected reply %v to %s", errNotDurable, reply, map[bool]string{false: "WAIT", true: "WAITAOF"}[d.aof])
}
