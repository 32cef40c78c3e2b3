package redlock

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"reflect"
	"sync"
	"sync/atomic"
	"time"

	"github.com/goredlock/goredlock/keyserver"
)

// Client takes locks on a set of independent key servers by majority vote:
// the DistributedLockClient of the Redlock algorithm. It is safe for
// concurrent use; share one per set of servers, and Close it when done.
type Client struct {
	servers   []keyserver.KeyServer
	quorum    int
	inProcess bool // every server is a keyserver.InProcess
	options
	health health
	// notifiers are the indexes of the servers that are Notifiers.
	notifiers []int
	// lines holds, per key, the line of this client's Acquire calls
	// waiting for it (*line).
	lines sync.Map

	mu     sync.Mutex
	closed bool
	// bg counts the calls in progress and the work they left running:
	// straggling server calls, clean-ups, the rest of a release. Close
	// waits for it.
	bg sync.WaitGroup
}

// New returns a Client over servers. Give it an odd number of independent
// servers, 3 or 5 in production; one server is plain single-node locking,
// and an even number tolerates no more failures than one server fewer
// (New logs a warning for it). It fails with ErrInvalidArgument for an
// empty list, a nil server or a bad option value.
func New(servers []keyserver.KeyServer, opts ...Option) (*Client, error) {
	if len(servers) == 0 {
		return nil, invalidArgument("no key servers")
	}
	for i, s := range servers {
		if isNil(s) {
			return nil, invalidArgument("key server %d is nil", i)
		}
	}
	o := defaultOptions()
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	if err := o.check(); err != nil {
		return nil, err
	}
	if o.fencing {
		if err := checkFencers(servers); err != nil {
			return nil, err
		}
	}
	if n := len(servers); n%2 == 0 {
		o.logger.Warn("redlock: an even number of key servers tolerates no more failures than one fewer",
			"servers", n, "failures_tolerated", n-quorum(n))
	}
	c := &Client{
		servers:   append([]keyserver.KeyServer(nil), servers...),
		quorum:    quorum(len(servers)),
		options:   o,
		inProcess: allInProcess(servers),
		health:    health{failures: make([]atomic.Int64, len(servers))},
	}
	for i, s := range servers {
		if _, ok := s.(keyserver.Notifier); ok {
			c.notifiers = append(c.notifiers, i)
		}
	}
	return c, nil
}

// allInProcess reports whether every server answers at once, so that the
// client may call them on its own goroutine.
func allInProcess(servers []keyserver.KeyServer) bool {
	for _, s := range servers {
		if _, ok := s.(keyserver.InProcess); !ok {
			return false
		}
	}
	return true
}

// isNil reports whether s is nil, also as a typed nil pointer in the
// interface, which would otherwise panic at the first call.
func isNil(s keyserver.KeyServer) bool {
	if s == nil {
		return true
	}
	switch v := reflect.ValueOf(s); v.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Func, reflect.Chan, reflect.Slice, reflect.Interface:
		return v.IsNil()
	}
	return false
}

// Quorum returns how many servers must agree for an operation to succeed: a
// strict majority of them.
func (c *Client) Quorum() int { return c.quorum }

// Close waits for everything the client left running: server calls that
// were still in flight when an outcome was decided, the clean-up after
// failed attempts, the rest of each release. After Close, every call on the
// client and on the locks it granted returns ErrClosed without reaching a
// server, so release locks before closing. Close does not close the key
// servers, which the caller owns. A second Close returns nil.
func (c *Client) Close() error {
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
	c.bg.Wait()
	return nil
}

// enter registers a call that reaches the servers, so that Close waits for
// it and for what it leaves running; it fails once Close was called. Every
// enter is paired with an exit.
func (c *Client) enter() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return ErrClosed
	}
	c.bg.Add(1)
	return nil
}

func (c *Client) exit() { c.bg.Done() }

// Acquire takes the lock called name for ttl, trying again after a jittered
// delay while it is held elsewhere or the servers fail, as WithRetryCount
// allows. On success the lock is valid until lock.Until(), which is a
// little less than ttl from now. Options override the client's for this
// call.
//
// The error is a *QuorumError satisfying errors.Is(err, ErrNotAcquired)
// when the lock could not be taken; also errors.Is(err, ErrHeldElsewhere)
// when a quorum answered that another token holds it, and errors.Is(err,
// ctx.Err()) when the context ended first. errors.As(err, &serverErr)
// finds each server's failure. Failures that retrying cannot fix end the
// retries at once.
func (c *Client) Acquire(ctx context.Context, name string, ttl time.Duration, opts ...Option) (l *Lock, err error) {
	ctx = c.start(ctx, "acquire", name)
	defer func() { c.end(ctx, "acquire", name, err) }()
	o, err := c.options.with(opts)
	if err != nil {
		return nil, err
	}
	return c.acquire(ctx, o, name, ttl, o.retryCount, earliest)
}

// TryAcquire makes a single attempt to take the lock: Acquire with no
// retries.
func (c *Client) TryAcquire(ctx context.Context, name string, ttl time.Duration, opts ...Option) (l *Lock, err error) {
	ctx = c.start(ctx, "try_acquire", name)
	defer func() { c.end(ctx, "try_acquire", name, err) }()
	o, err := c.options.with(opts)
	if err != nil {
		return nil, err
	}
	return c.acquire(ctx, o, name, ttl, 0, earliest)
}

// acquire makes attempts until one is granted, the retries run out, or the
// votes say retrying is pointless: a quorum of refusals under
// untilKnownHeld (DoOrSkip skips then), or failures that cannot heal.
// Acquire and Do (retries under earliest) wait in the key's line of this
// client once refused, or at once when others wait there already (see
// line); between attempts, they wait for a release (see await).
func (c *Client) acquire(ctx context.Context, o *options, name string, ttl time.Duration, retries int, r rule) (l *Lock, err error) {
	if err := checkLock(o, name, ttl); err != nil {
		return nil, err
	}
	var (
		key     = o.keyPrefix + name
		s       = series{began: c.clock.Now()}
		last    tally
		attempt int
		q       *line
		w       *waiter
	)
	if c.hooks.Acquired != nil {
		began := c.clock.Now()
		defer func() {
			c.hooks.Acquired(ctx, Acquisition{Name: name, Attempts: attempt, Duration: c.clock.Since(began), Err: err})
		}()
	}
	defer func() {
		if l == nil {
			c.abandon(ctx, o, name, key, ttl, &s)
		}
		if q != nil {
			c.leave(q, w, l)
		}
	}()
	queued := r == earliest && retries != 0
	if queued && c.lineFor(key) != nil { // others wait: no overtaking them
		var front bool
		q, w, front = c.join(key, retries)
		if attempt, err = c.takeTurn(ctx, name, q, w, front); err != nil {
			return nil, err
		}
	}
	for attempt++; ; attempt++ {
		if err := ctx.Err(); err != nil {
			attempt--
			return nil, notAcquired(name, attempt, last, err)
		}
		final := retries >= 0 && attempt > retries
		if held, _ := q.heldHere(c.clock.Now()); held {
			// A call of this client holds the lock: every server would
			// refuse. Wait for its release; a wait that the retry delay
			// ends counts as a refused attempt, of the front's only, as
			// the lock is moving along the line.
			if err := c.await(ctx, o, q, tally{}); err != nil {
				return nil, notAcquired(name, attempt-1, last, err)
			}
			if held, _ := q.heldHere(c.clock.Now()); !held {
				attempt--
				continue
			}
			last = tally{n: len(c.servers), refused: len(c.servers)}
			if final {
				return nil, notAcquired(name, attempt, last, nil)
			}
			continue
		}
		if q != nil {
			c.arm(ctx, &q.watch, key, o.timeoutFor(ttl), last, true)
		}
		if !s.kept {
			s.tails = q.handOver()
		}
		l, t, err := c.attempt(ctx, o, name, key, ttl, r, attempt, &s, !final)
		if l != nil || err != nil {
			return l, err
		}
		last = t
		if q != nil {
			q.refused(t)
		}
		if r == untilKnownHeld && t.skip(attempt, final) {
			err := notAcquired(name, attempt, last, nil)
			err.skip = true
			return nil, err
		}
		if t.hopeless() || final {
			return nil, notAcquired(name, attempt, last, ctx.Err())
		}
		if queued && q == nil {
			var front bool
			if q, w, front = c.join(key, retries); !front {
				spent, err := c.takeTurn(ctx, name, q, w, false)
				if err != nil {
					return nil, err
				}
				attempt += spent
				continue
			}
		}
		if q != nil && q.watch.chans == nil {
			// A release between the refusal and the watch goes unheard:
			// the wait then ends by the holder's TTL or the retry delay.
			c.arm(ctx, &q.watch, key, o.timeoutFor(ttl), t, false)
		}
		if err := c.await(ctx, o, q, t); err != nil {
			return nil, notAcquired(name, attempt, last, err)
		}
	}
}

// takeTurn waits until w is the front of q, unless it is already, and
// returns how many refused attempts were made while w waited.
func (c *Client) takeTurn(ctx context.Context, name string, q *line, w *waiter, front bool) (int, error) {
	if front {
		return 0, nil
	}
	return c.awaitTurn(ctx, name, q, w)
}

// series is what the attempts of one call share. Each attempt draws a
// fresh token, so that it never waits for the calls of the one before,
// which may hang on a server that stopped answering; every token carries
// the time the call began (its rank). An attempt that kept the servers
// that granted it (see tally.keep) passes its token on instead, and the
// next attempt's calls follow its calls, server by server, as the calls of
// one token must.
type series struct {
	began time.Time
	token string
	// tails holds per server a channel closed once the call the next
	// attempt's call there must follow has finished: the last attempt's
	// when it kept its servers, or the release of the lock this client
	// held before (see line.after). nil when there are none.
	tails []<-chan struct{}
	kept  bool // the last attempt kept the servers that granted it
}

// abandon gives back the servers that the last attempt of a call kept,
// when the call ends without the lock.
func (c *Client) abandon(ctx context.Context, o *options, name, key string, ttl time.Duration, s *series) {
	if !s.kept {
		return
	}
	s.kept = false
	if c.enter() != nil {
		return // closed: the keys run out with their TTL
	}
	defer c.exit()
	rctx, cancel := c.detach(ctx, o.timeoutFor(ttl))
	defer cancel()
	f := fan{op: opRelease, name: name, key: key, token: s.token, timeout: o.timeoutFor(ttl), after: s.tails}
	res := c.fanOut(rctx, f)
	c.settle(rctx, &f, &res, false)
}

// attempt is one round of the algorithm: Acquire on every server, and the
// lock if a quorum granted it with validity beyond the loss margin left.
// Otherwise the token is released everywhere, unless mayKeep and the
// refusals say the others will give way (tally.keep). It returns once the
// votes are in and the servers that granted have been cleaned up; servers
// that did not answer are cleaned up in the background.
func (c *Client) attempt(ctx context.Context, o *options, name, key string, ttl time.Duration, r rule, number int, s *series, mayKeep bool) (*Lock, tally, error) {
	if err := c.enter(); err != nil {
		return nil, tally{}, err
	}
	defer c.exit()
	if !s.kept { // a fresh token: no earlier call of it to wait for
		token, err := o.newToken(s.began)
		if err != nil {
			return nil, tally{}, fmt.Errorf("redlock: generating a token: %w", err)
		}
		s.token = token
	}
	f := fan{op: opAcquire, name: name, key: key, token: s.token, ttl: ttl, timeout: o.timeoutFor(ttl), rule: r, undo: true,
		after: s.tails, holders: true}
	if o.fencing {
		f.op = opAcquireFenced
	}
	start := c.clock.Now()
	res := c.fanOut(ctx, f)
	t := res.tally
	margin := o.marginFor(ttl)
	granted := t.won() && validity(ttl, c.clock.Since(start), o.driftFactor) > margin
	var fence uint64
	if granted && o.fencing {
		// The token is drawn while the keys are held, before the verdict:
		// a failure undoes the grant like any other.
		var ft tally
		if fence, ft = c.fence(ctx, o, name, key, ttl, t.maxN); fence == 0 {
			granted, t = false, ft
		}
		granted = granted && validity(ttl, c.clock.Since(start), o.driftFactor) > margin
	}
	elapsed := c.clock.Since(start)
	kept := !granted && mayKeep && !t.won() && t.keep()
	c.settle(ctx, &f, &res, !granted && !kept)
	s.tails, s.kept = res.done, kept
	c.logVotes(opAcquire, name, t)
	if c.hooks.Attempt != nil {
		c.hooks.Attempt(ctx, Attempt{Name: name, Number: number, Servers: t.n, Granted: t.granted, Refused: t.refused,
			Failed: len(t.errs), Duration: elapsed, OK: granted})
	}
	if !granted {
		if t.won() {
			c.logger.Warn("redlock: quorum came too late to leave validity beyond the loss margin",
				"lock", name, "validity", validity(ttl, elapsed, o.driftFactor), "loss_margin", margin)
		}
		if o.fencing && t.maxN >= keyserver.MaxFence {
			return nil, t, fenceErr(name)
		}
		return nil, t, nil
	}
	return newLock(c, o, grant{name: name, key: key, token: s.token, ttl: ttl, start: start, tails: res.done, fence: fence, ctx: ctx}), t, nil
}

// checkLock validates a lock name and TTL for Acquire, TryAcquire and Do.
func checkLock(o *options, name string, ttl time.Duration) error {
	if name == "" {
		return invalidArgument("empty lock name")
	}
	return checkTTL(o, name, ttl)
}

// checkTTL refuses a TTL that could never give a usable lock: one that the
// clock drift allowance and the loss margin use up.
func checkTTL(o *options, name string, ttl time.Duration) error {
	if ttl < keyserver.MinTTL {
		return invalidArgument("ttl %v of lock %q is under the minimum of %v", ttl, name, keyserver.MinTTL)
	}
	d := drift(ttl, o.driftFactor)
	if ttl <= d {
		return invalidArgument("ttl %v of lock %q is not longer than its clock drift allowance %v", ttl, name, d)
	}
	if m := o.marginFor(ttl); ttl-d <= m {
		return invalidArgument("ttl %v of lock %q leaves no validity beyond its loss margin %v (drift allowance %v)",
			ttl, name, m, d)
	}
	return nil
}

// retryWait draws the wait before the next attempt from delay±jitter.
func (o *options) retryWait() time.Duration {
	j := o.jitter()
	if j == 0 {
		return o.retryDelay
	}
	r := rand.Int64N
	if o.randInt64N != nil {
		r = o.randInt64N
	}
	return o.retryDelay - j + time.Duration(r(int64(2*j)+1))
}

// notAcquired is Acquire's error after attempts, the last of which ended
// with the votes t.
func notAcquired(name string, attempts int, t tally, ctxErr error) *QuorumError {
	sentinel := ErrNotAcquired
	if t.heldElsewhere() {
		sentinel = ErrHeldElsewhere
	}
	return newQuorumError("acquire", name, attempts, t, ctxErr, sentinel)
}

// logVotes reports a lost vote at debug level; fanOut has already logged
// each server failure.
func (c *Client) logVotes(op opKind, name string, t tally) {
	if !t.won() {
		c.logger.Debug("redlock: quorum not reached", "op", op, "lock", name,
			"granted", t.granted, "refused", t.refused, "servers", t.n)
	}
}

// newToken draws a lock's token for an Acquire call that began at start:
// 16 hexadecimal digits of start in Unix milliseconds, a dot, and 32
// random hexadecimal digits, so that it carries a rank (keyserver.RankOf)
// by which contenders who split the servers agree on who gives way, the
// earliest call first. The 128 random bits come from the runtime's ChaCha8
// generator (math/rand/v2), seeded from the operating system: tokens must
// not collide, and this needs no system call and one allocation.
func newToken(start time.Time) (string, error) {
	var s [keyserver.TokenLen]byte
	var u [24]byte
	binary.BigEndian.PutUint64(u[0:8], uint64(start.UnixMilli()))
	binary.LittleEndian.PutUint64(u[8:16], rand.Uint64())
	binary.LittleEndian.PutUint64(u[16:24], rand.Uint64())
	hex.Encode(s[0:16], u[0:8])
	s[16] = '.'
	hex.Encode(s[17:], u[8:])
	return string(s[:]), nil
}
