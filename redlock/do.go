package redlock

import (
	"context"
	"errors"
	"sync"
	"time"
)

// Do runs fn while holding the lock called name: it acquires the lock as
// Acquire does, keeps it alive while fn runs (see KeepAlive), and releases
// it when fn returns or panics. fn's context ends with ctx, is cancelled
// with cause ErrLockLost when the lock is declared lost, and is cancelled
// before the lock is released ("The holder hears first" in
// docs/design.md); LockFromContext gives fn the lock.
//
// Do returns fn's error, joined with ErrLockLost if the lock was lost while
// fn ran, or with ErrClosed if Client.Close ended fn's context, or the
// acquisition error if fn never ran. A panic in fn is raised again after
// the lock is released.
func (c *Client) Do(ctx context.Context, name string, ttl time.Duration, fn func(context.Context) error, opts ...Option) error {
	_, err := c.takeHold(ctx, "do", lockKind, name, nil, ttl, waits, true, fn, opts, c.lockHold(name))
	return err
}

// DoOrSkip is Do for work that one process should do and the others may
// skip, such as a scheduled job started on every host. It skips, returning
// ran=false and err=nil without calling fn, when a quorum of servers
// answers that another token holds the lock ("Scheduled jobs" in
// docs/design.md). A split vote or failing servers are retried as Acquire
// retries them; running out of retries is an error, never a skip, and so
// is ctx ending. fn's error is returned as it is, ErrNotAcquired included.
func (c *Client) DoOrSkip(ctx context.Context, name string, ttl time.Duration, fn func(context.Context) error, opts ...Option) (ran bool, err error) {
	ctx = c.callBegins(ctx, "do_or_skip", name)
	defer func() { c.callEnds(ctx, "do_or_skip", name, err) }()
	o, err := c.primOptions(lockKind, name, ttl, opts)
	if err != nil {
		return false, err
	}
	return c.doWith(ctx, o, lockKind, name, ttl, fn, func(o *options) (*Lock, error) {
		return c.acquireHold(ctx, o, name, o.keyPrefix+name, ttl, skips, false, lockOps{})
	})
}

// lockKey is the context key under which Do and DoOrSkip give fn its lock.
type lockKey struct{}

// LockFromContext returns the lock that Do or DoOrSkip holds while running
// the fn it gave ctx to: its Until, Token, Err and Done.
func LockFromContext(ctx context.Context) (*Lock, bool) {
	l, ok := ctx.Value(lockKey{}).(*Lock)
	return l, ok
}

// hold runs fn under l, kept alive, and then ends fn's context and
// releases l (which keeps it for the rest of a minimum hold, if any).
func (c *Client) hold(ctx context.Context, l *Lock, fn func(context.Context) error) (err error) {
	fctx, cancel := context.WithCancelCause(context.WithValue(ctx, lockKey{}, l))
	stopOnLoss := context.AfterFunc(l.lifeContext(), func() { cancel(ErrLockLost) })
	stopClose := context.AfterFunc(c.closing, func() { cancel(ErrClosed) })

	// The keep-alive outlives ctx: fn may take a moment to notice that
	// ctx ended, and the lock must stay valid until it has returned.
	kctx, stopKeepAlive := context.WithCancel(context.WithoutCancel(ctx))
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		// Its end is already logged where it happens (lock lost, cap
		// reached); Do reports the loss through fn's context and its result.
		_ = l.KeepAlive(kctx)
	}()

	// Deferred, so that it also runs when fn panics; the panic then goes on.
	defer func() {
		// The holder hears first: fn's context ends before the servers
		// are told. If the lock was lost, the cause is already ErrLockLost.
		stopOnLoss()
		closed := !stopClose() && errors.Is(context.Cause(fctx), ErrClosed)
		cancel(context.Canceled)
		stopKeepAlive()
		wg.Wait()
		lost := errors.Is(l.Err(), ErrLockLost)
		if rerr := l.Release(ctx); rerr != nil && !lost {
			c.logger.Warn("redlock: release after Do failed", "lock", l.name, "error", rerr)
		}
		if lost && !errors.Is(err, ErrLockLost) {
			err = errors.Join(err, l.Err()) // ErrLockLost, in a primitive's words for its hold
		}
		if closed && !errors.Is(err, ErrClosed) {
			err = errors.Join(err, ErrClosed)
		}
	}()
	return fn(fctx)
}

// doWith is every Do, with its options o, whose name and TTL are checked,
// and its acquisition of a hold of kind k given: it takes the hold with
// acquire, then runs fn under it; ran is false when fn did not run, with a
// nil error when a skipping acquisition skipped. It refuses, before any
// server is asked, what Do could not carry through: a nil fn, a TTL too
// short to keep alive.
func (c *Client) doWith(ctx context.Context, o *options, k kindName, name string, ttl time.Duration, fn func(context.Context) error,
	acquire func(*options) (*Lock, error)) (ran bool, err error) {
	if fn == nil {
		return false, invalidArgument("nil function for %s", k.of(name))
	}
	if _, err := keepAliveInterval(o, k, name, o.budget(ttl)); err != nil {
		return false, err
	}
	if err := c.enterDo(); err != nil {
		return false, err
	}
	defer c.dos.Done()
	l, err := acquire(o)
	if err != nil {
		var qe *QuorumError
		if errors.As(err, &qe) && qe.skip {
			return false, nil
		}
		return false, err
	}
	return true, c.hold(ctx, l, fn)
}
