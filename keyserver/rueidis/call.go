package rueidis

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/rueidis"

	"github.com/goredlock/goredlock/internal/redisscript"
	"github.com/goredlock/goredlock/keyserver"
)

// Acquire stores key=token for ttl if key is absent, or renews it if it
// already holds token.
func (s *Server) Acquire(ctx context.Context, key, token string, ttl time.Duration) (bool, error) {
	if err := keyserver.CheckArgs(key, token, ttl, true); err != nil {
		return false, err
	}
	n, err := s.run(ctx, "acquire", setScript, key, []string{key}, token, strconv.FormatInt(ttl.Milliseconds(), 10))
	return n == 1, err
}

// Extend renews key if it holds token, and stores it again if it is
// absent.
func (s *Server) Extend(ctx context.Context, key, token string, ttl time.Duration) (bool, error) {
	if err := keyserver.CheckArgs(key, token, ttl, true); err != nil {
		return false, err
	}
	n, err := s.run(ctx, "extend", setScript, key, []string{key}, token, strconv.FormatInt(ttl.Milliseconds(), 10))
	return n == 1, err
}

// Release deletes key if it holds token.
func (s *Server) Release(ctx context.Context, key, token string) (bool, error) {
	if err := keyserver.CheckArgs(key, token, 0, false); err != nil {
		return false, err
	}
	n, err := s.run(ctx, "release", delScript, key, []string{key}, token)
	return n == 1, err
}

// AcquireFenced is Acquire, and reads key's fence counter, kept under
// keyserver.FenceKey(key) with no TTL, in the same script. The two keys
// share a hash slot, so the script runs on a Redis Cluster too.
func (s *Server) AcquireFenced(ctx context.Context, key, token string, ttl time.Duration) (bool, uint64, error) {
	if err := keyserver.CheckArgs(key, token, ttl, true); err != nil {
		return false, 0, err
	}
	n, err := s.run(ctx, "acquire", fencedScript, key, []string{key, keyserver.FenceKey(key)}, token, strconv.FormatInt(ttl.Milliseconds(), 10))
	if err != nil || n < 0 {
		return false, 0, err
	}
	return n&1 == 1, uint64(n >> 1), nil
}

// RaiseFence sets key's fence counter to fence if it holds less, and
// returns the counter as it was.
func (s *Server) RaiseFence(ctx context.Context, key string, fence uint64) (uint64, error) {
	if err := keyserver.CheckArgs(key, "-", 0, false); err != nil {
		return 0, err
	}
	if fence > keyserver.MaxFence {
		return 0, fmt.Errorf("%w: fence %d of key %q is above %d", keyserver.ErrInvalidArgument, fence, key, uint64(keyserver.MaxFence))
	}
	n, err := s.run(ctx, "raise fence", raiseScript, key, []string{keyserver.FenceKey(key)}, strconv.FormatUint(fence, 10))
	if err != nil || n < 0 {
		return 0, err
	}
	return uint64(n), nil
}

// reply is the outcome of one script run.
type reply struct {
	n   int64
	err error
}

// run runs script on keys and returns its integer reply when it answers or
// ctx ends, whichever comes first; errors name op and the lock key key.
// The command runs on its own goroutine, which inflight tracks until
// rueidis returns (see the package doc).
func (s *Server) run(ctx context.Context, op string, script *rueidis.Lua, key string, keys []string, args ...string) (int64, error) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return 0, s.errorf(op, key, ErrClosed)
	}
	if err := ctx.Err(); err != nil {
		s.mu.Unlock()
		return 0, s.errorf(op, key, err)
	}
	s.inflight.Add(1)
	s.mu.Unlock()

	if ctx.Done() == nil { // a context that never ends needs no watching
		defer s.inflight.Done()
		n, err := s.exec(ctx, script, keys, args)
		return s.result(ctx, op, key, n, err)
	}
	replies := make(chan reply, 1)
	go func() {
		defer s.inflight.Done()
		n, err := s.exec(ctx, script, keys, args)
		replies <- reply{n, err}
	}()
	select {
	case r := <-replies:
		return s.result(ctx, op, key, r.n, r.err)
	case <-ctx.Done():
		select {
		case r := <-replies: // answered as the context ended: the answer counts
			return s.result(ctx, op, key, r.n, r.err)
		default:
			return 0, s.errorf(op, key, ctx.Err())
		}
	}
}

// errCrossSlot is what a Cluster client's call on keys of different hash
// slots fails with: a fenced call on a key that contains '}' without a
// hash tag of its own (see keyserver.FenceKey). Redis would refuse the
// script with this reply; rueidis refuses to build the command, by a panic.
var errCrossSlot = errors.New("CROSSSLOT Keys in request don't hash to the same slot")

// crossSlotPanic is the value rueidis's command builder panics with.
const crossSlotPanic = "multi key command with different key slots are not allowed"

// exec runs script and reads its integer reply. A Cluster client's
// builder panics on keys of different slots, before anything is sent,
// rather than letting Redis refuse them; exec turns that one panic into
// errCrossSlot, and lets any other go on (as it would if a later rueidis
// panicked with another text).
func (s *Server) exec(ctx context.Context, script *rueidis.Lua, keys, args []string) (n int64, err error) {
	if len(keys) > 1 {
		defer func() {
			if r := recover(); r != nil {
				if r != crossSlotPanic {
					panic(r)
				}
				n, err = 0, errCrossSlot
			}
		}()
	}
	return script.Exec(ctx, s.client, keys, args).AsInt64()
}

func (s *Server) result(ctx context.Context, op, key string, n int64, err error) (int64, error) {
	if err != nil {
		return 0, s.errorf(op, key, notOurs(ctx, err))
	}
	return n, nil
}

// notOurs keeps a context error that is not ctx's from passing for it. A
// rueidis connection that broke when an earlier call's deadline passed
// reports that deadline to the next call on it; errors.Is(err,
// context.DeadlineExceeded) must mean that the caller's own context ended.
func notOurs(ctx context.Context, err error) error {
	for _, ctxErr := range []error{context.DeadlineExceeded, context.Canceled} {
		if errors.Is(err, ctxErr) && ctx.Err() != ctxErr {
			return fmt.Errorf("connection broken by an earlier call (%v)", err)
		}
	}
	return err
}

// errorf names the server, the operation and the key, so that one line of a
// log says which of N servers failed and on what.
// A Redis error reply that retrying cannot fix (WRONGTYPE, a rejected
// password) is marked with keyserver.Permanent.
func (s *Server) errorf(op, key string, err error) error {
	if permanentReply(err) {
		err = keyserver.Permanent(err)
	}
	return fmt.Errorf("%s: %s %q: %w", s.name, op, key, err)
}

// permanentReply reports whether err is a Redis error reply that the same
// call would get again.
func permanentReply(err error) bool {
	if errors.Is(err, errCrossSlot) { // Redis's reply, had rueidis sent the call
		return redisscript.PermanentReply(errCrossSlot.Error())
	}
	reply, ok := rueidis.IsRedisErr(err)
	return ok && redisscript.PermanentReply(reply.Error())
}
