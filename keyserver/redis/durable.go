package redis

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/goredlock/goredlock/keyserver"
	"github.com/goredlock/goredlock/keyserver/redis/internal/redigotransport"
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

// durability is a Server's WithWait or WithWaitAOF. The WAITs are the
// pipelined transport's: it sends one after the writes on their own
// connection, one in flight at a time, and the writes sent meanwhile
// share the next (see redigotransport's confirm.go).
type durability struct {
	aof             bool
	local, replicas int
	refused         error // why this Server cannot wait: every write fails with it

	words []string      // WAIT n, or WAITAOF local n, without the timeout
	via   confirmSender // the transport, when it can send them
}

// confirmSender is FromURL's pipelined transport, which alone sends a
// write's WAIT after it on the connection that carried it.
type confirmSender interface {
	DoConfirmed(ctx context.Context, confirm []string, cmd, keys []string, args ...string) (any, *redigotransport.Confirmation, error)
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

// over readies d for a Server over t: the words of its WAIT, or why t
// cannot send them.
func (d *durability) over(t Transport) {
	if d.refused = d.check(); d.refused != nil {
		return
	}
	pt, ok := t.(pipelinedTransport)
	if !ok {
		d.refused = fmt.Errorf("%w: wait and waitaof need FromURL's pipelined connection: WAIT confirms the writes of its own connection only", keyserver.ErrInvalidArgument)
		return
	}
	d.via = pt
	if d.aof {
		d.words = []string{"WAITAOF", strconv.Itoa(d.local), strconv.Itoa(d.replicas)}
	} else {
		d.words = []string{"WAIT", strconv.Itoa(d.replicas)}
	}
}

// canWait fails, before it writes, a call of a Server that cannot wait.
func (s *Server) canWait(op, key string) error {
	if s.wait.refused != nil {
		return s.fail(op, key, s.wait.refused)
	}
	return nil
}

// send runs a command, followed by its WAIT when confirm (see
// confirmed); the Confirmation is nil otherwise.
func (s *Server) send(ctx context.Context, confirm bool, cmd, keys []string, args ...string) (any, *redigotransport.Confirmation, error) {
	if confirm {
		return s.wait.via.DoConfirmed(ctx, s.wait.words, cmd, keys, args...)
	}
	reply, err := s.t.Do(ctx, cmd, keys, args...)
	return reply, nil, err
}

// confirmed waits for conf, the WAIT that followed a write of the
// Server's on its connection, and judges its reply: nil once the
// replicas confirmed the write in time, and a failed vote otherwise.
func (s *Server) confirmed(ctx context.Context, op, key string, conf *redigotransport.Confirmation) error {
	reply, err := conf.Wait(ctx)
	if err != nil {
		return s.fail(op, key, fmt.Errorf("%w: %w", errNotDurable, err))
	}
	if err := s.wait.judge(reply); err != nil {
		return s.fail(op, key, err)
	}
	return nil
}

// judge reads the reply of a WAIT or WAITAOF: nil when enough replicas
// (and the local append-only file) confirmed.
func (d *durability) judge(reply any) error {
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
	return fmt.Errorf("%w: unexpected reply %v to %s", errNotDurable, reply, d.words[0])
}
