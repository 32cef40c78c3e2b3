package redis

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	redigo "github.com/gomodule/redigo/redis"

	"github.com/goredlock/goredlock/internal/check"
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

	via *redigotransport.Pipelined // the transport, which confirms the writes
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

// confirming is what FromURL's transport sends after the writes to
// confirm, and how it reads the answer.
func (d *durability) confirming() redigotransport.Confirming {
	words := []string{"WAIT", strconv.Itoa(d.replicas)}
	if d.aof {
		words = []string{"WAITAOF", strconv.Itoa(d.local), strconv.Itoa(d.replicas)}
	}
	return redigotransport.Confirming{Words: words, Judge: d.judge}
}

// over readies d for a Server over t, or records why t cannot confirm.
func (d *durability) over(t Transport) {
	if d.refused = d.check(); d.refused != nil {
		return
	}
	if pt, ok := t.(pipelinedTransport); ok && pt.Confirms() {
		d.via = pt.Pipelined
		return
	}
	d.refused = fmt.Errorf("%w: wait and waitaof need FromURL's pipelined connection: WAIT confirms the writes of its own connection only", keyserver.ErrInvalidArgument)
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
		return s.wait.via.DoConfirmed(ctx, cmd, keys, args...)
	}
	reply, err := s.t.Do(ctx, cmd, keys, args...)
	return reply, nil, err
}

// confirmed waits for the verdict of conf, the WAIT that followed a write
// of the Server's on its connection (DoConfirmed): nil once the replicas
// confirmed it in time, a failed vote otherwise. A write whose reply is
// nil (SET NX refused) wrote nothing, and has nothing to wait for, as
// when started (StartConfirmed).
func (s *Server) confirmed(ctx context.Context, op, key string, reply any, conf *redigotransport.Confirmation) error {
	if reply == nil {
		return nil
	}
	if err := conf.Wait(ctx); err != nil {
		return s.fail(op, key, err)
	}
	return nil
}

// judge reads the answer of a WAIT or WAITAOF: nil when enough replicas
// (and the local append-only file) confirmed, the error of a failed vote
// otherwise, or when err kept the answer from coming. An error reply is
// quoted, not wrapped: the caller reads the write's own error replies
// (NOSCRIPT, a refused EVALSHA) through the error, and must not take the
// WAIT's for one. One that retrying cannot fix (WAITAOF unknown to the
// engine) is permanent.
func (d *durability) judge(reply any, err error) error {
	if err != nil {
		var r redigo.Error
		if errors.As(err, &r) {
			err = fmt.Errorf("%s replied %q", d.command(), string(r))
			if containsAny(string(r), permanentCodes) {
				return check.Permanent(fmt.Errorf("%w: %w", errNotDurable, err))
			}
		}
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
	return fmt.Errorf("%w: unexpected reply %v to %s", errNotDurable, reply, d.command())
}

// command is the name of d's command.
func (d *durability) command() string {
	if d.aof {
		return "WAITAOF"
	}
	return "WAIT"
}

// startConfirming is the commandStarter of a Server that waits: it starts
// a write that grants with its WAIT (its reply comes once the WAIT
// confirmed it), another command as it is, and leaves to the blocking
// method one it cannot tell (the scripting check's first write).
type startConfirming struct {
	s *Server
	t *redigotransport.Pipelined
}

// StartCommand is commandStarter's.
func (sc startConfirming) StartCommand(cmd, keys, args []string, deadline time.Time, to interface{ Answer(reply any, err error) }) bool {
	switch grants, known := sc.s.grants(cmd); {
	case !known:
		return false
	case grants:
		return sc.t.StartConfirmed(cmd, keys, args, deadline, to)
	}
	return sc.t.StartCommand(cmd, keys, args, deadline, to)
}

// grants tells whether a command that Start sends first may write a vote
// (SET NX, or EVALSHA of a script that grants), and known is false for
// one it cannot tell.
func (s *Server) grants(cmd []string) (grants, known bool) {
	switch cmd[0] {
	case "SET":
		return true, true
	case "EVALSHA":
		for i := range s.digests {
			if d := s.digests[i].Load(); d != nil && *d != "" && *d == cmd[1] {
				return scripts[i].grants, true
			}
		}
	}
	return false, false
}
