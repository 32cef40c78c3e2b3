package redlock

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"
)

// KeepAlive extends the lock every keep-alive interval (a third of the TTL
// by default), with the TTL of its last grant. A failed extension is
// retried every server timeout while its answer can still come before
// Until − loss margin, when the lock is declared lost, never later
// ("Extensions" in docs/design.md).
//
// KeepAlive blocks; run at most one per lock, in its own goroutine. It
// returns nil once the lock is released, an error matching ErrLockLost once
// it is lost (also when WithMaxExtensions or WithMaxHold stopped it),
// ErrClosed once the client is closed, and ctx's error when ctx ends first,
// leaving the lock held until it would be declared lost.
func (l *Lock) KeepAlive(ctx context.Context) error {
	if l.zero() {
		return errNilLock
	}
	// live ends with ctx or with the lock, whichever is first.
	live, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(l.lifeContext(), cancel)()

	for {
		l.mu.Lock()
		l.checkExpiry()
		err, b, granted, lossAt, extensions := l.err, l.b, l.granted, l.lossAt, int(l.extensions)
		l.mu.Unlock()
		if err != nil {
			return l.stopped(ctx, "")
		}
		interval, err := keepAliveInterval(l.o, l.kind.name(), l.name, b)
		if err != nil {
			return err
		}
		due := granted.Add(interval)
		if why := l.capReached(extensions, due, b.ttl); why != "" {
			l.c.logger.Info("redlock: keep-alive stopped", "lock", l.name, "reason", why)
			return l.awaitLoss(ctx, live, lossAt, why)
		}
		if done, err := l.extendFrom(ctx, live, b, due, lossAt); done {
			return err
		}
	}
}

// extendFrom extends the lock at due, retrying while an answer could still
// come before lossAt. It reports done, with KeepAlive's error, when keeping
// alive ends; otherwise the lock's state says what next.
func (l *Lock) extendFrom(ctx, live context.Context, b budget, due, lossAt time.Time) (done bool, err error) {
	c, timeout := l.c, b.timeout
	lastTry := lossAt.Add(-timeout)
	for failures := 0; ; failures++ {
		if err := c.clock.Sleep(live, due.Sub(c.clock.Now())); err != nil {
			return true, l.stopped(ctx, "")
		}
		if c.clock.Now().After(lastTry) { // no try could be answered in time
			return true, l.awaitLoss(ctx, live, lossAt, "")
		}
		err := l.Extend(live, b.ttl)
		if err == nil || errors.Is(err, ErrNotHeld) || errors.Is(err, ErrLockLost) {
			return false, nil
		}
		if errors.Is(err, ErrClosed) {
			return true, err
		}
		if live.Err() != nil {
			return true, l.stopped(ctx, "")
		}
		// One warning per outage; the retries every server timeout would
		// drown the log.
		level := slog.LevelDebug
		if failures == 0 {
			level = slog.LevelWarn
		}
		c.logger.Log(live, level, "redlock: extension failed; retrying while the lock is held",
			"lock", l.name, "lost_in", lossAt.Sub(c.clock.Now()).Round(time.Millisecond), "error", err)
		due = c.clock.Now().Add(timeout)
	}
}

// keepAliveInterval returns how often a lock of ttl is extended, or an
// error if that leaves no time for an extension to be answered before the
// lock would be declared lost.
func keepAliveInterval(o *options, k kindName, name string, b budget) (time.Duration, error) {
	interval := o.keepAlive
	if interval == 0 {
		interval = b.ttl / 3
	}
	held := b.ttl - drift(b.ttl, o.driftFactor) - b.margin
	if interval+b.timeout >= held {
		return 0, invalidArgument("keep-alive interval %v leaves no time to extend the %s (held for %v after each extension, server timeout %v)",
			interval, k.of(name), held, b.timeout)
	}
	return interval, nil
}

// awaitLoss waits until the lock is declared lost at lossAt, or live
// ends, and returns KeepAlive's result (see stopped). The expiry timer
// declares the loss too; this does not wait for the timer's goroutine.
func (l *Lock) awaitLoss(ctx, live context.Context, lossAt time.Time, why string) error {
	if l.c.clock.Sleep(live, lossAt.Sub(l.c.clock.Now())) == nil {
		_ = l.Err() // declares the loss
	}
	return l.stopped(ctx, why)
}

// capReached says which cap, if any, forbids the next extension, due at.
func (l *Lock) capReached(extensions int, at time.Time, ttl time.Duration) string {
	o := l.o
	if o.maxExtensions > 0 && extensions >= o.maxExtensions {
		return fmt.Sprintf("extension limit of %d reached", o.maxExtensions)
	}
	if o.maxHold > 0 {
		next := at.Add(ttl - drift(ttl, o.driftFactor))
		if next.After(l.acquired.Add(o.maxHold)) {
			return fmt.Sprintf("maximum hold time of %v reached", o.maxHold)
		}
	}
	return ""
}

// stopped is KeepAlive's result once its context or the lock ended; why
// names the cap that stopped the extensions, if one did.
func (l *Lock) stopped(ctx context.Context, why string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.released:
		return nil
	case why != "":
		return holdErr(l.kind.name(), l.name, []error{l.err}, "lost: %s", why)
	}
	return l.err
}
