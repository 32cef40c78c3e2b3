package redlock

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"
)

// KeepAlive extends the lock in the background of a long job, every
// keep-alive interval (a third of the TTL by default), with the TTL of its
// last grant. A failed extension is tried again every server timeout while
// the lock is still valid; once no further try could be answered before
// Until, the lock is declared lost: Done is closed and Err reports
// ErrLockLost before its validity ends, never after.
//
// KeepAlive blocks; run it in its own goroutine. It returns nil once the
// lock is released, an error satisfying errors.Is(err, ErrLockLost) once it
// is lost (also when WithMaxExtensions or WithMaxHold stopped the
// extensions), and ctx's error when ctx ends first, leaving the lock valid
// until its Until. Run at most one KeepAlive per lock.
func (l *Lock) KeepAlive(ctx context.Context) error {
	c := l.c
	// live ends with ctx or with the lock, whichever is first.
	live, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(l.life, cancel)()

	for {
		l.mu.Lock()
		l.checkExpiry()
		err, ttl, granted, until, extensions := l.err, l.ttl, l.granted, l.until, l.extensions
		l.mu.Unlock()
		if err != nil {
			if l.isReleased() {
				return nil
			}
			return err
		}
		interval, err := c.keepAliveInterval(l.name, ttl)
		if err != nil {
			return err
		}
		timeout := c.timeoutFor(ttl)
		// The last moment a try can start and still be answered before
		// the lock runs out.
		lastTry := until.Add(-timeout)
		if why := l.capReached(extensions, granted.Add(interval), ttl); why != "" {
			return l.runOut(live, ctx, lastTry, why)
		}

		if err := c.clock.Sleep(live, granted.Add(interval).Sub(c.clock.Now())); err != nil {
			return l.stopped(ctx)
		}
		for failures := 0; ; failures++ {
			err := l.Extend(live, ttl)
			if err == nil || errors.Is(err, ErrNotHeld) || errors.Is(err, ErrLockLost) {
				break // the outer loop reads the new state
			}
			if live.Err() != nil {
				return l.stopped(ctx)
			}
			// One warning per outage; the retries every server timeout
			// would drown the log.
			level := slog.LevelDebug
			if failures == 0 {
				level = slog.LevelWarn
			}
			c.logger.Log(live, level, "redlock: extension failed; retrying while the lock is valid",
				"lock", l.name, "valid_for", until.Sub(c.clock.Now()), "error", err)
			now := c.clock.Now()
			if !now.Add(timeout).Before(lastTry) {
				l.lose("no extension could be confirmed before the lock's validity ends")
				break
			}
			if err := c.clock.Sleep(live, timeout); err != nil {
				return l.stopped(ctx)
			}
		}
	}
}

// keepAliveInterval returns how often a lock of ttl is extended, or an
// error if that leaves no time for an extension to be answered within the
// lock's validity.
func (c *Client) keepAliveInterval(name string, ttl time.Duration) (time.Duration, error) {
	interval := c.keepAlive
	if interval == 0 {
		interval = ttl / 3
	}
	if valid := ttl - drift(ttl, c.driftFactor); interval+c.timeoutFor(ttl) >= valid {
		return 0, fmt.Errorf("%w: keep-alive interval %v leaves no time to extend lock %q (validity %v, server timeout %v)",
			ErrInvalidArgument, interval, name, valid, c.timeoutFor(ttl))
	}
	return interval, nil
}

// capReached says which cap, if any, forbids the next extension, due at.
func (l *Lock) capReached(extensions int, at time.Time, ttl time.Duration) string {
	c := l.c
	if c.maxExtensions > 0 && extensions >= c.maxExtensions {
		return fmt.Sprintf("extension limit of %d reached", c.maxExtensions)
	}
	if c.maxHold > 0 {
		next := at.Add(ttl - drift(ttl, c.driftFactor))
		if next.After(l.acquired.Add(c.maxHold)) {
			return fmt.Sprintf("maximum hold time of %v reached", c.maxHold)
		}
	}
	return ""
}

// runOut waits, without extending, until the lock's last safe moment and
// then declares it lost, so that its holder hears of it before it runs out.
func (l *Lock) runOut(live, ctx context.Context, lastTry time.Time, why string) error {
	c := l.c
	c.logger.Info("redlock: keep-alive stopped", "lock", l.name, "reason", why)
	if err := c.clock.Sleep(live, lastTry.Sub(c.clock.Now())); err != nil {
		return l.stopped(ctx)
	}
	l.lose(why)
	return fmt.Errorf("%w: lock %q: %s", ErrLockLost, l.name, why)
}

// lose declares the lock lost ahead of its Until.
func (l *Lock) lose(why string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err == nil {
		l.c.logger.Warn("redlock: lock lost", "lock", l.name, "reason", why)
		l.end(ErrLockLost)
	}
}

// stopped is KeepAlive's result once its context or the lock ended.
func (l *Lock) stopped(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if l.isReleased() {
		return nil
	}
	return l.Err()
}

func (l *Lock) isReleased() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.released
}
