package redlock

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// Do runs fn while holding the lock called name: it acquires the lock as
// Acquire does, keeps it alive in the background while fn runs (see
// KeepAlive), and releases it when fn returns, panics, or ctx ends.
//
// fn's context is cancelled, with context.Cause equal to ErrLockLost, the
// moment the lock is lost; fn should then stop, as another process may take
// the lock. Do returns fn's error, joined with ErrLockLost if the lock was
// lost while fn ran, or the acquisition error if fn never ran. A panic in fn
// is raised again after the lock is released.
func (c *Client) Do(ctx context.Context, name string, ttl time.Duration, fn func(context.Context) error) error {
	if err := c.checkDo(name, ttl, fn); err != nil {
		return err
	}
	l, err := c.Acquire(ctx, name, ttl)
	if err != nil {
		return err
	}
	return c.hold(ctx, l, fn)
}

// DoOrSkip is Do for work that one process should do and the others may
// skip, such as a nightly job started on every host: when the lock is held
// elsewhere (a quorum of servers refused it on the last attempt) it returns
// ran=false and err=nil without calling fn. Every other failure, such as too
// many servers down or ctx ending, is an error, and so is anything fn
// returns, ErrNotAcquired included.
func (c *Client) DoOrSkip(ctx context.Context, name string, ttl time.Duration, fn func(context.Context) error) (ran bool, err error) {
	if err := c.checkDo(name, ttl, fn); err != nil {
		return false, err
	}
	l, err := c.Acquire(ctx, name, ttl)
	if err != nil {
		var qe *quorumError
		if errors.As(err, &qe) && qe.sentinel == ErrNotAcquired && qe.contended() {
			return false, nil
		}
		return false, err
	}
	return true, c.hold(ctx, l, fn)
}

// checkDo refuses, before any server is asked, what Do could not carry
// through: bad lock arguments, a nil fn, a TTL too short to keep alive.
func (c *Client) checkDo(name string, ttl time.Duration, fn func(context.Context) error) error {
	if fn == nil {
		return fmt.Errorf("%w: nil function for lock %q", ErrInvalidArgument, name)
	}
	if err := c.checkLock(name, ttl); err != nil {
		return err
	}
	_, err := c.keepAliveInterval(name, ttl)
	return err
}

// hold runs fn under l, kept alive, and releases l afterwards.
func (c *Client) hold(ctx context.Context, l *Lock, fn func(context.Context) error) (err error) {
	fctx, cancel := context.WithCancelCause(ctx)
	stopWatch := context.AfterFunc(l.life, func() { cancel(ErrLockLost) })

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
		stopKeepAlive()
		wg.Wait()
		stopWatch()
		lost := errors.Is(l.Err(), ErrLockLost)
		if rerr := l.Release(context.WithoutCancel(ctx)); rerr != nil && !lost {
			c.logger.Warn("redlock: release after Do failed", "lock", l.name, "error", rerr)
		}
		cancel(context.Canceled)
		if lost && !errors.Is(err, ErrLockLost) {
			err = errors.Join(err, ErrLockLost)
		}
	}()
	return fn(fctx)
}
