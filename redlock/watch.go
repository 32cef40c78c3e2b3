package redlock

import (
	"context"
	"sync"
	"time"

	"github.com/goredlock/goredlock/keyserver"
)

// watch is what a waiting call watches on one server: its turn in the
// server's line (a lock; a set, in the line of each key not yet promised
// to it), or a change of the key (a primitive).
type watch struct {
	changed []<-chan struct{} // nil when none is armed
	stop    func()
	at      time.Time // when it was set
	anew    bool      // to be set anew at the next arming (see waitForChange)
	// late is the watch being set on a server the call did not wait for
	// (see arm): nil once none is.
	late *lateWatch
}

// lateWatch is a watch set on its own goroutine. Whichever of the setter
// and the call is last takes care of it: the call takes it in (takeIn),
// or the setter stops what it set for a call that stopped watching.
type lateWatch struct {
	mu   sync.Mutex
	done bool  // set, or failed to be: w is what the call takes in
	gone bool  // the call stopped watching
	w    watch // what was set
}

// armed reports whether w watches anything.
func (w *watch) armed() bool { return w.changed != nil }

// takeIn takes in the watch set late, once it is.
func (w *watch) takeIn() {
	l := w.late
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.done {
		*w = l.w
	}
}

// end stops w, or leaves its stopping to the setter still at work.
func (w *watch) end() {
	if l := w.late; l != nil {
		l.mu.Lock()
		l.gone = true
		done := l.done
		l.mu.Unlock()
		if done && l.w.stop != nil {
			l.w.stop()
		}
	} else if w.stop != nil {
		w.stop()
	}
	*w = watch{}
}

// fired reports whether one of w's channels is closed: a turn came, or the
// watch broke.
func (w *watch) fired() bool {
	for _, ch := range w.changed {
		if closed(ch) {
			return true
		}
	}
	return false
}

// watches are a waiting call's watches, one per server, nil until it
// first watches: the acquisition's waits (wait.go) and Election.Observe
// watch with them.
type watches []watch

// watchOf is what watches watch for on each server: the turn of token in
// key's lines, or a change of key, as kind watches (holdKind.watch).
type watchOf struct {
	kind             holdKind
	name, key, token string // name for the logs
	timeout          time.Duration
}

// renewWatches is how often a waiter sets its watches anew: a server may
// forget a watch not set again within keyserver.LineTTL.
const renewWatches = keyserver.LineTTL / 3

// arm arms the watches where none is armed or one is marked anew, and
// with renew where one fired or a change's is due; a fired watch is
// renewed only after the wait it ended, which it would swallow. Servers
// that failed last, the call's last refusal, are not watched, and a set
// is not watched for the keys a server promised it there. A change is
// watched on servers that had not answered the last attempt without
// waiting for them (see late): a server paused or cut off holds up no wait
// for its timeout, which its breaker takes a second to notice.
func (ws *watches) arm(ctx context.Context, c *Client, of watchOf, last *tally, renew bool) {
	if *ws == nil {
		*ws = make(watches, len(c.servers))
	}
	ws.takeIn()
	turns := of.kind.turns()
	now := c.clock.Now()
	var (
		wg  sync.WaitGroup
		old []func()
	)
	for i, ks := range c.servers {
		w := &(*ws)[i]
		due := renew && (w.fired() || !turns && now.Sub(w.at) >= renewWatches)
		if turns && c.notifierMask&bit(i) == 0 || w.late != nil || w.armed() && !w.anew && !due {
			continue // a late one is still being set
		}
		stopOld := w.stop
		*w = watch{}
		if last.failed(i) || c.health.breakers[i].open.Load() || c.polled[i].Load() {
			if stopOld != nil {
				old = append(old, stopOld)
			}
			continue // a server down would hold up every wait; one that refused a watch is polled
		}
		promised := last.promisedOn(i)
		set := func() watch {
			wctx, cancel := c.clock.WithTimeout(ctx, of.timeout)
			changed, stop, err := of.kind.watch(wctx, ks, of.key, of.token, promised)
			cancel()
			if err != nil {
				c.watchFailed(ctx, i, of.name, err)
				return watch{}
			}
			return watch{changed: changed, stop: stop, at: now}
		}
		switch {
		case turns:
			// Turns one server after another: the call's place in the lines
			// is taken.
			*w = set()
		case last.late(i):
			// The old watch stops once the new is set, as below.
			l := &lateWatch{}
			*w = watch{late: l}
			c.bg.Add(1)
			go func() {
				defer c.bg.Done()
				nw := set()
				if stopOld != nil {
					stopOld()
				}
				l.mu.Lock()
				l.done, l.w = true, nw
				gone := l.gone
				l.mu.Unlock()
				if gone && nw.stop != nil {
					nw.stop()
				}
			}()
			continue
		default:
			// A change's at once: one armed late lets a release pass it by.
			wg.Add(1)
			go func() {
				defer wg.Done()
				*w = set()
			}()
		}
		if stopOld != nil {
			old = append(old, stopOld)
		}
	}
	wg.Wait()
	// Stopped after the new ones are set, so the call stays among the watchers.
	for _, stop := range old {
		stop()
	}
}

// takeIn takes in the watches set late that are.
func (ws watches) takeIn() {
	for i := range ws {
		ws[i].takeIn()
	}
}

// stop ends every watch.
func (ws watches) stop() {
	for i := range ws {
		ws[i].end()
	}
}

// armed is how many of the watches are armed.
func (ws watches) armed() int {
	n := 0
	for i := range ws {
		if ws[i].takeIn(); ws[i].armed() {
			n++
		}
	}
	return n
}

// told counts the watches that fired, and the turns a call needs before
// it tries: one from each of a quorum of its armed watches, or from every
// armed watch when fewer stand (at least one).
func (ws watches) told(quorum int) (turns, need int) {
	for i := range ws {
		if ws[i].takeIn(); ws[i].fired() {
			turns++
		}
	}
	return turns, max(min(ws.armed(), quorum), 1)
}

// wake appends to chans the channels of the armed watches that have not
// fired, for a wait to wake by, and counts those that fired.
func (ws watches) wake(chans []<-chan struct{}) ([]<-chan struct{}, int) {
	fired := 0
	for i := range ws {
		if ws[i].takeIn(); ws[i].fired() {
			fired++
		} else {
			chans = append(chans, ws[i].changed...)
		}
	}
	return chans, fired
}
