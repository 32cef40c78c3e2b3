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
	return &Client{
		servers:   append([]keyserver.KeyServer(nil), servers...),
		quorum:    quorum(len(servers)),
		options:   o,
		inProcess: allInProcess(servers),
		health:    health{failures: make([]atomic.Int64, len(servers))},
	}, nil
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
func (c *Client) acquire(ctx context.Context, o *options, name string, ttl time.Duration, retries int, r rule) (l *Lock, err error) {
	if err := checkLock(o, name, ttl); err != nil {
		return nil, err
	}
	var (
		last    tally
		attempt int
	)
	if c.hooks.Acquired != nil {
		began := c.clock.Now()
		defer func() {
			c.hooks.Acquired(ctx, Acquisition{Name: name, Attempts: attempt, Duration: c.clock.Since(began), Err: err})
		}()
	}
	for attempt = 1; ; attempt++ {
		if err := ctx.Err(); err != nil {
			attempt--
			return nil, notAcquired(name, attempt, last, err)
		}
		l, t, err := c.attempt(ctx, o, name, ttl, r, attempt)
		if l != nil || err != nil {
			return l, err
		}
		last = t
		final := retries >= 0 && attempt > retries
		if (r == untilKnownHeld && t.skip(attempt, final)) || t.hopeless() || final {
			return nil, notAcquired(name, attempt, last, ctx.Err())
		}
		if err := c.clock.Sleep(ctx, o.retryWait()); err != nil {
			return nil, notAcquired(name, attempt, last, err)
		}
	}
}

// attempt is one round of the algorithm: a fresh token, Acquire on every
// server, and the lock if a quorum granted it with validity beyond the
// loss margin left; otherwise the token is released everywhere. It returns
// once the votes are in and the servers that granted have been cleaned up;
// servers that did not answer are cleaned up in the background.
func (c *Client) attempt(ctx context.Context, o *options, name string, ttl time.Duration, r rule, number int) (*Lock, tally, error) {
	if err := c.enter(); err != nil {
		return nil, tally{}, err
	}
	defer c.exit()
	token, err := o.newToken()
	if err != nil {
		return nil, tally{}, fmt.Errorf("redlock: generating a token: %w", err)
	}
	key := o.keyPrefix + name
	f := fan{op: opAcquire, name: name, key: key, token: token, ttl: ttl, timeout: o.timeoutFor(ttl), rule: r, undo: true}
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
	c.settle(ctx, &f, &res, !granted)
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
	return newLock(c, o, grant{name: name, key: key, token: token, ttl: ttl, start: start, tails: res.done, fence: fence, ctx: ctx}), t, nil
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
func notAcquired(name string, attempts int, t tally, ctxErr error) error {
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

// newToken draws a random UUID (version 4) as a lock's token. Its 122
// random bits come from the runtime's ChaCha8 generator (math/rand/v2),
// seeded from the operating system: tokens must not collide, and this
// needs no system call and one allocation.
func newToken() (string, error) {
	var u [16]byte
	binary.LittleEndian.PutUint64(u[:8], rand.Uint64())
	binary.LittleEndian.PutUint64(u[8:], rand.Uint64())
	u[6] = u[6]&0x0f | 0x40 // version 4
	u[8] = u[8]&0x3f | 0x80 // RFC 9562 variant
	var s [36]byte
	hex.Encode(s[0:8], u[0:4])
	s[8] = '-'
	hex.Encode(s[9:13], u[4:6])
	s[13] = '-'
	hex.Encode(s[14:18], u[6:8])
	s[18] = '-'
	hex.Encode(s[19:23], u[8:10])
	s[23] = '-'
	hex.Encode(s[24:], u[10:])
	return string(s[:]), nil
}
