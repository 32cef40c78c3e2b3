// Package redisfence refuses stale writes to a data Redis (or Valkey): a
// write carries the fencing token of the lock its writer holds, and is
// made only if no write with a higher token was made before it, in one
// atomic step on the server. A holder that was paused past its lease
// (a GC pause, a stopped process, a slow network) and wakes up to write
// after the next holder did is refused with ErrStale, and changes nothing.
// That is the check that makes a lease safe for the resource; without it
// a fencing token protects nothing. What it does not do: a late write that
// lands before the next holder's first write is made (no higher fence was
// seen yet), and the next holder's write then replaces it.
//
// The Redis is the one that holds the data, not one of the lock's servers:
//
//	client, err := redlock.New(servers, redlock.WithFencing())
//	...
//	g := redisfence.New(pool) // a redigo pool for the data Redis
//	err = client.Do(ctx, "invoice:42", 10*time.Second, func(ctx context.Context) error {
//		lock, _ := redlock.LockFromContext(ctx)
//		return g.Set(ctx, "invoice:42", data, lock.Fence(), 0) // ErrStale: a later holder wrote
//	})
//
// The fence of a data key is kept under FenceKey(key), without a TTL, so
// that it outlives the data: deleting it lets any fence write again, a
// stale one included.
package redisfence

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/goredlock/goredlock/keyserver"
)

// ErrStale is returned, as a *StaleError, for a write whose fence is lower
// than one a write to the same key already stored: a later holder of the
// lock has written, and the write was not made.
var ErrStale = errors.New("redisfence: stale fence")

// StaleError is a write refused for its fence. It matches ErrStale under
// errors.Is.
type StaleError struct {
	Key   string // the data key (for Eval, the first of the keys)
	Fence uint64 // the write's fence
	Seen  uint64 // the higher fence stored beside Key
}

func (e *StaleError) Error() string {
	return fmt.Sprintf("redisfence: stale fence %d for %q: fence %d already wrote", e.Fence, e.Key, e.Seen)
}

// Is reports whether target is ErrStale.
func (e *StaleError) Is(target error) bool { return target == ErrStale }

// Pool hands out connections to the data Redis; *redis.Pool (redigo) is
// one. A Guard gives each connection back (Close) after its call, and
// never closes the pool.
type Pool interface {
	GetContext(ctx context.Context) (redis.Conn, error)
}

// Guard makes fenced writes to one data Redis. It is safe for concurrent
// use and holds nothing of its own: the fences live in the Redis, so any
// number of Guards, in any number of processes, guard the same keys.
type Guard struct {
	pool Pool
}

// New returns a Guard that writes through pool.
func New(pool Pool) *Guard { return &Guard{pool: pool} }

// FenceKey is the key that holds the highest fence that wrote to key. It
// hashes to key's Redis Cluster slot, so that one script can touch both: a
// key with a hash tag keeps it ("{user:1}:cart" -> "{user:1}:cart:fence-seen"),
// and any other key becomes the tag ("cart" -> "{cart}:fence-seen"); a
// key that contains '}' without a tag of its own cannot (its slot is the
// whole key's, the fence key's is the part before '}'), and its writes fail
// with CROSSSLOT on a Cluster, work elsewhere. The suffix is not that of the lock servers' fence counters, so that a guard
// pointed at a lock server by mistake cannot move a lock's fence counter.
func FenceKey(key string) string {
	const suffix = ":fence-seen"
	if open := strings.IndexByte(key, '{'); open >= 0 {
		if end := strings.IndexByte(key[open+1:], '}'); end > 0 {
			return key + suffix // key's own tag
		}
	}
	return "{" + key + "}" + suffix
}

// The scripts, each in its file under lua/ with the guard they share
// (lua/guard.lua) put in place of their guardLine.
var (
	//go:embed lua/guard.lua
	guardSrc string

	//go:embed lua/set.lua
	setFile   string
	setScript = redis.NewScript(2, guarded(setFile))

	//go:embed lua/eval.lua
	evalFile string
	evalSrc  = guarded(evalFile)
)

// guardLine is the line of each script that guarded replaces with
// lua/guard.lua.
const guardLine = "-- guard.lua\n"

// guarded is src with the guard in place of its guardLine.
func guarded(src string) string { return strings.Replace(src, guardLine, guardSrc, 1) }

// bodyLine is the line of eval.lua that Eval replaces with the caller's
// script.
const bodyLine = "return nil -- the caller's script\n"

// Set sets key to value if fence is at least the highest fence that wrote
// to key before (none yet: any fence), and stores fence beside key
// (FenceKey), in one atomic step. A fence equal to the stored one writes
// again, so a holder may write as often as it likes while it holds the
// lock. A lower fence returns a *StaleError (ErrStale) and changes nothing.
//
// ttl, when not 0, expires the value (whole milliseconds, at least one);
// with 0 the value does not expire, and an expiry it had is dropped, as
// SET does. The fence never expires. A fence of 0 (a lock taken without
// redlock.WithFencing) or an empty key is keyserver.ErrInvalidArgument.
func (g *Guard) Set(ctx context.Context, key string, value []byte, fence uint64, ttl time.Duration) error {
	if err := check(key, fence); err != nil {
		return err
	}
	ms := ttl.Milliseconds()
	if ttl < 0 || (ttl > 0 && ms == 0) {
		return fmt.Errorf("%w: redisfence: ttl %v for %q is neither 0 nor at least 1ms", keyserver.ErrInvalidArgument, ttl, key)
	}
	_, err := g.run(ctx, setScript, key, fence, key, FenceKey(key), strconv.FormatUint(fence, 10), value, ms)
	return err
}

// Eval runs script, a Lua script as EVAL takes it, with keys as its KEYS
// and args as its ARGV, if fence is at least the highest fence stored for
// keys[0] (FenceKey(keys[0])); then stores fence there and returns the
// script's reply, as redigo returns EVAL's. A lower fence runs nothing,
// changes nothing and returns a *StaleError (ErrStale).
//
// The check, the script and the storing of the fence are one script on
// the server, so no other write comes between them: the guard's own
// script (lua/eval.lua) has script as the body of a function whose
// parameters are named KEYS and ARGV, and calls it with the tables
// without the guard's entries. Hence:
//   - the script reads KEYS and ARGV as if it ran alone, and its return
//     value is the reply;
//   - it cannot begin with a shebang (#!lua flags=...), and the line
//     numbers of its errors are those of the whole script, 15 more;
//   - if it raises an error, the writes it made before stay (as with any
//     Redis script) and the fence is left as it was.
//
// The keys, with FenceKey(keys[0]), must hash to one slot in a Redis
// Cluster: hash tags do it. A fence of 0, no keys or an empty keys[0] is
// keyserver.ErrInvalidArgument.
func (g *Guard) Eval(ctx context.Context, script string, keys []string, fence uint64, args ...any) (any, error) {
	if len(keys) == 0 {
		return nil, fmt.Errorf("%w: redisfence: Eval with no key to fence", keyserver.ErrInvalidArgument)
	}
	if err := check(keys[0], fence); err != nil {
		return nil, err
	}
	s := redis.NewScript(1+len(keys), wrap(script))
	keysAndArgs := make([]any, 0, 2+len(keys)+len(args))
	keysAndArgs = append(keysAndArgs, FenceKey(keys[0]))
	for _, k := range keys {
		keysAndArgs = append(keysAndArgs, k)
	}
	keysAndArgs = append(keysAndArgs, strconv.FormatUint(fence, 10))
	keysAndArgs = append(keysAndArgs, args...)
	return g.run(ctx, s, keys[0], fence, keysAndArgs...)
}

// wrap is eval.lua with script as its body.
func wrap(script string) string {
	return strings.Replace(evalSrc, bodyLine, script+"\n", 1)
}

// run runs s on a connection of the pool, within ctx, and turns the
// guard's refusal into a *StaleError for key and fence.
func (g *Guard) run(ctx context.Context, s *redis.Script, key string, fence uint64, keysAndArgs ...any) (any, error) {
	conn, err := g.pool.GetContext(ctx)
	if err != nil {
		return nil, fmt.Errorf("redisfence: %w", err)
	}
	defer conn.Close()
	reply, err := s.DoContext(ctx, conn, keysAndArgs...)
	if e, ok := err.(redis.Error); ok {
		if seen, ok := strings.CutPrefix(string(e), staleCode); ok {
			if n, perr := strconv.ParseUint(seen, 10, 64); perr == nil {
				return nil, &StaleError{Key: key, Fence: fence, Seen: n}
			}
		}
	}
	if err != nil {
		if ctxErr := ctxErr(ctx); ctxErr != nil && !errors.Is(err, ctxErr) {
			return nil, fmt.Errorf("redisfence: %w (%w)", ctxErr, err)
		}
		return nil, fmt.Errorf("redisfence: %w", err)
	}
	return reply, nil
}

// ctxErr is ctx's error, or context.DeadlineExceeded once ctx's deadline
// has passed: redigo reads with ctx's deadline as the connection's, whose
// timeout can come before ctx says it is done.
func ctxErr(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if d, ok := ctx.Deadline(); ok && !time.Now().Before(d) {
		return context.DeadlineExceeded
	}
	return nil
}

// staleCode begins the error reply of the guard's scripts for a stale
// fence, followed by the fence stored.
const staleCode = "FENCESTALE "

// check is the arguments every write needs.
func check(key string, fence uint64) error {
	switch {
	case key == "":
		return fmt.Errorf("%w: redisfence: empty key", keyserver.ErrInvalidArgument)
	case fence == 0:
		return fmt.Errorf("%w: redisfence: fence 0 for %q: take the lock with redlock.WithFencing", keyserver.ErrInvalidArgument, key)
	}
	return nil
}
