package redlock

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/goredlock/goredlock/keyserver"
)

// Client takes locks on a set of independent key servers by majority vote:
// the DistributedLockClient of the Redlock algorithm. It is safe for
// concurrent use; share one per set of servers.
type Client struct {
	servers []keyserver.KeyServer
	quorum  int
	options

	// bg counts the goroutines of fan-outs, which may outlive the call that
	// started them by up to two server timeouts; tests wait on it.
	bg sync.WaitGroup
}

// New returns a Client over servers. Give it an odd number of independent
// servers, 3 or 5 in production; one server is plain single-node locking.
// It fails with ErrInvalidArgument for an empty list, a nil server or a bad
// option value.
func New(servers []keyserver.KeyServer, opts ...Option) (*Client, error) {
	if len(servers) == 0 {
		return nil, fmt.Errorf("%w: no key servers", ErrInvalidArgument)
	}
	for i, s := range servers {
		if s == nil {
			return nil, fmt.Errorf("%w: key server %d is nil", ErrInvalidArgument, i)
		}
	}
	o := defaultOptions()
	for _, opt := range opts {
		opt(&o)
	}
	if err := o.check(); err != nil {
		return nil, err
	}
	return &Client{
		servers: append([]keyserver.KeyServer(nil), servers...),
		quorum:  quorum(len(servers)),
		options: o,
	}, nil
}

// Quorum returns how many servers must agree for an operation to succeed: a
// strict majority of them.
func (c *Client) Quorum() int { return c.quorum }

// Acquire takes the lock called name for ttl, trying again after a jittered
// delay while it is held elsewhere, as WithRetryCount allows. On success the
// lock is valid until lock.Until(), which is a little less than ttl from now.
//
// The error satisfies errors.Is(err, ErrNotAcquired) when the lock could not
// be taken, and also errors.Is(err, ctx.Err()) when the context ended first;
// errors.As(err, &serverErr) finds each server's failure.
func (c *Client) Acquire(ctx context.Context, name string, ttl time.Duration) (*Lock, error) {
	return c.acquire(ctx, name, ttl, c.retryCount)
}

// TryAcquire makes a single attempt to take the lock: Acquire with no
// retries.
func (c *Client) TryAcquire(ctx context.Context, name string, ttl time.Duration) (*Lock, error) {
	return c.acquire(ctx, name, ttl, 0)
}

func (c *Client) acquire(ctx context.Context, name string, ttl time.Duration, retries int) (*Lock, error) {
	if err := c.checkLock(name, ttl); err != nil {
		return nil, err
	}
	var last tally
	for attempt := 1; ; attempt++ {
		if err := ctx.Err(); err != nil {
			return nil, c.notAcquired(name, attempt-1, last, err)
		}
		l, t, err := c.attempt(ctx, name, ttl)
		if l != nil || err != nil {
			return l, err
		}
		last = t
		if retries >= 0 && attempt > retries {
			return nil, c.notAcquired(name, attempt, last, ctx.Err())
		}
		if err := c.clock.Sleep(ctx, c.retryWait()); err != nil {
			return nil, c.notAcquired(name, attempt, last, err)
		}
	}
}

// attempt is one round of the algorithm: a fresh token, Acquire on every
// server, and the lock if a quorum granted it with validity left; otherwise
// the token is released everywhere.
func (c *Client) attempt(ctx context.Context, name string, ttl time.Duration) (*Lock, tally, error) {
	token, err := c.newToken()
	if err != nil {
		return nil, tally{}, fmt.Errorf("redlock: generating a token: %w", err)
	}
	key := c.keyPrefix + name
	start := c.clock.Now()
	t, settle := c.fanOut(ctx, c.timeoutFor(ttl), "acquire", name,
		func(ctx context.Context, ks keyserver.KeyServer) (bool, error) {
			return ks.Acquire(ctx, key, token, ttl)
		},
		func(ctx context.Context, ks keyserver.KeyServer) (bool, error) { return ks.Release(ctx, key, token) })
	left := validity(ttl, c.clock.Since(start), c.driftFactor)
	granted := t.won() && left > 0
	settle(!granted)
	c.logVotes("acquire", name, t)
	if !granted {
		if t.won() {
			c.logger.Warn("redlock: quorum came too late to leave any validity", "lock", name, "validity", left)
		}
		return nil, t, nil
	}
	return newLock(c, name, key, token, ttl, start), t, nil
}

// checkLock validates a lock name and TTL for Acquire, TryAcquire and Do;
// Extend, which has its name already, checks only the TTL.
func (c *Client) checkLock(name string, ttl time.Duration) error {
	if name == "" {
		return fmt.Errorf("%w: empty lock name", ErrInvalidArgument)
	}
	return c.checkTTL(name, ttl)
}

func (c *Client) checkTTL(name string, ttl time.Duration) error {
	if d := drift(ttl, c.driftFactor); ttl <= d || ttl < keyserver.MinTTL {
		return fmt.Errorf("%w: ttl %v of lock %q is not longer than its clock drift allowance %v",
			ErrInvalidArgument, ttl, name, d)
	}
	return nil
}

// timeoutFor is the bound on one call to one server for a lock of ttl.
func (c *Client) timeoutFor(ttl time.Duration) time.Duration {
	if c.serverTimeout > 0 {
		return c.serverTimeout
	}
	return max(ttl/20, time.Millisecond)
}

// retryWait draws the wait before the next attempt from delay±jitter.
func (c *Client) retryWait() time.Duration {
	if c.retryJitter == 0 {
		return c.retryDelay
	}
	r := rand.Int64N
	if c.randInt64N != nil {
		r = c.randInt64N
	}
	return c.retryDelay - c.retryJitter + time.Duration(r(int64(2*c.retryJitter)+1))
}

func (c *Client) notAcquired(name string, attempts int, t tally, ctxErr error) error {
	what := fmt.Sprintf("lock %q not acquired after %d attempt(s)", name, attempts)
	return &quorumError{sentinel: ErrNotAcquired, what: what, tally: t, ctxErr: ctxErr}
}

// logVotes reports a lost vote at debug level; fanOut has already logged
// each server failure.
func (c *Client) logVotes(op, name string, t tally) {
	if !t.won() {
		c.logger.Debug("redlock: quorum not reached", "op", op, "lock", name,
			"granted", t.granted, "refused", t.refused, "servers", t.n)
	}
}

func newToken() (string, error) {
	u, err := uuid.NewRandom()
	if err != nil {
		return "", err
	}
	return u.String(), nil
}
