package redlock

import (
	"context"
	"time"

	"github.com/goredlock/goredlock/keyserver"
)

// watch is a line's watch of its key on the servers that are Notifiers:
// per such server (c.notifiers), the channel its release closes, or nil
// where no watch is armed.
type watch struct {
	chans []<-chan struct{}
	stops []func()
}

// arm arms a watch on every Notifier that answered the last attempt, or,
// when rearm, replaces the watches of an armed w that fired or broke, so
// that a release after the next attempt is not missed. A server whose
// Watch fails is polled instead, by the retry delay. Watches are cheap: a Notifier shares one subscription per
// key among the waiters of a process.
func (c *Client) arm(ctx context.Context, w *watch, key string, timeout time.Duration, last tally, rearm bool) {
	if len(c.notifiers) == 0 || (rearm && w.chans == nil) {
		return
	}
	if w.chans == nil {
		w.chans = make([]<-chan struct{}, len(c.notifiers))
		w.stops = make([]func(), len(c.notifiers))
	}
	for j, i := range c.notifiers {
		if w.chans[j] != nil && !closed(w.chans[j]) {
			continue
		}
		if failed(last, i) {
			continue // a server that is down would hold up every wait
		}
		wctx, cancel := c.clock.WithTimeout(ctx, timeout)
		ch, stop, err := c.servers[i].(keyserver.Notifier).Watch(wctx, key)
		cancel()
		if w.stops[j] != nil { // after the new watch, so that the subscription stays
			w.stops[j]()
		}
		w.chans[j], w.stops[j] = nil, nil
		if err == nil {
			w.chans[j], w.stops[j] = ch, stop
		}
	}
}

// stop ends every watch; w is then unarmed.
func (w *watch) stop() {
	for _, stop := range w.stops {
		if stop != nil {
			stop()
		}
	}
	w.chans, w.stops = nil, nil
}

// await waits, after a refused attempt, until the lock may be free: a
// release announced by a server or made by this client, the holder's key
// running out (the shortest TTL the refusals reported), or the retry delay,
// whichever comes first; the retry delay bounds every wait, so that
// WithRetryCount keeps its meaning. Releases on the servers that granted
// t's attempt do not count. While a front of this client's line
// holds the lock, only its release is waited for: the servers' news would
// only repeat it. A call outside any line (q nil, DoOrSkip) waits for
// the holder's TTL or the retry delay.
func (c *Client) await(ctx context.Context, o *options, q *line, t tally) error {
	d := o.retryWait()
	held, released := q.heldHere(c.clock.Now())
	if !held && t.left > 0 && t.left < d {
		d = t.left
	}
	var wake []<-chan struct{}
	if released != nil {
		wake = append(wake, released)
	}
	if q != nil && !held {
		for j, ch := range q.watch.chans {
			// Not the servers that granted t's attempt: they are free,
			// and the clean-up of what they granted would wake the
			// caller.
			if i := c.notifiers[j]; ch != nil && (i >= 64 || t.granters&(1<<i) == 0) {
				wake = append(wake, ch)
			}
		}
	}
	return c.clock.SleepOrWake(ctx, d, wake)
}

// closed reports whether ch is closed, without waiting.
func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// failed reports whether server i failed in the votes t.
func failed(t tally, i int) bool {
	for _, e := range t.errs {
		if e.Server == i {
			return true
		}
	}
	return false
}
