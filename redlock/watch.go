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
	// late is the watch still being set when arm returned (see arm): nil
	// once the call has taken it in.
	late *setting
}

// setting is a watch being set on a goroutine of its own. The last of the
// setter and the call takes care of it: the call takes it in (takeIn), or
// the setter stops what it set for a call that stopped watching.
type setting struct {
	ready chan struct{} // closed once set, or failed to be
	mu    sync.Mutex
	gone  bool  // the call stopped watching
	w     watch // what was set, once ready
}

func (w *watch) armed() bool { return w.changed != nil }

// takeIn takes in the watch set late, once it is.
func (w *watch) takeIn() {
	if l := w.late; l != nil && closed(l.ready) {
		*w = l.w
	}
}

// end stops w, or leaves its stopping to the setter still at work.
func (w *watch) end() {
	if l := w.late; l != nil {
		l.mu.Lock()
		l.gone = true
		set := closed(l.ready) // else the setter stops what it sets
		l.mu.Unlock()
		if set && l.w.stop != nil {
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

// renewEvery is how often a waiter renews what a server may forget when
// not renewed within keyserver.LineTTL: its watches, and a lock's waiter
// its place in line, by trying again.
const renewEvery = keyserver.LineTTL / 3

// arm arms the watches where none is armed or one is marked anew,
// renews a change's watch that stood renewEvery unfired, and with renew
// renews those that fired; a fired watch is renewed only after the wait
// it ended, which it would swallow. Servers that failed last, the call's
// last refusal, are not watched, and a set is not watched for the keys a
// server promised it there.
//
// It returns how many watches it renewed had fired: the changes they
// told of are yet to be looked at, and a count before arm would miss
// those that fire in between. One that fires as it is renewed stays fired.
//
// A change's watches are set at once, and arm waits for them, but not on
// a slow server that had not answered the last attempt: its call there is
// still out (calls, the last attempt's per server, nil if all ended), or
// its last call failed. A watch set late there may miss the release it
// was for, which beats stalling every wait until the breaker opens ("How
// primitives wait" in docs/design.md); the call takes it in (takeIn).
func (ws *watches) arm(ctx context.Context, c *Client, of watchOf, last *tally, calls []<-chan struct{}, renew bool) (told int) {
	if *ws == nil {
		*ws = make(watches, len(c.servers))
	}
	ws.takeIn()
	turns := of.kind.traits().turns
	now := c.clock.Now()
	type started struct {
		l       *setting
		server  int
		mayLate bool // its server had not answered the last attempt
	}
	var sets []started
	for i, ks := range c.servers {
		w := &(*ws)[i]
		fired := w.fired()
		due := renew && fired || !fired && !turns && now.Sub(w.at) >= renewEvery
		if turns && c.notifierMask&bit(i) == 0 || w.late != nil || w.armed() && !w.anew && !due {
			continue // one being set is left to its setter
		}
		old := *w // an anew one fired for the call's own undo: it tells nothing
		if fired && !old.anew {
			told++
		}
		*w = watch{}
		if last.failed(i) || c.health.breakers[i].open.Load() || c.polled[i].Load() || c.enter() != nil {
			old.end()
			continue // a server down would hold up every wait; one that refused a watch is polled
		}
		promised := last.promisedOn(i)
		set := func() watch {
			wctx, cancel := c.clock.WithTimeout(ctx, of.timeout)
			changed, stop, err := of.kind.watch(wctx, ks, of.key, of.token, promised)
			cancel()
			if err != nil {
				c.watchFailed(ctx, i, of.name, err)
				changed, stop = nil, nil
			}
			if !fired && !old.anew && old.fired() {
				changed = append(changed, old.changed...) // it fired while renewed: still told
			}
			old.end() // once the new one is set, so the call stays among the watchers
			return watch{changed: changed, stop: stop, at: now}
		}
		if turns {
			// Turns one server after another: the call's place in the lines
			// is taken.
			*w = set()
			c.exit()
			continue
		}
		l := &setting{ready: make(chan struct{})}
		*w = watch{late: l}
		sets = append(sets, started{l, i, last.late(i)})
		go func() {
			defer c.exit()
			nw := set()
			l.mu.Lock()
			l.w = nw
			close(l.ready)
			gone := l.gone
			l.mu.Unlock()
			if gone && nw.stop != nil {
				nw.stop()
			}
		}()
	}
	for _, s := range sets {
		if !s.mayLate {
			<-s.l.ready // within the timeout
		}
	}
	for _, s := range sets { // asked once the others are set: stragglers had that long
		if s.mayLate && !c.slow(s.server, calls) {
			<-s.l.ready
		}
	}
	ws.takeIn()
	return told
}

// slow reports whether server i is slow to answer: its call of calls
// (see arm) is still out, or its last call failed.
func (c *Client) slow(i int, calls []<-chan struct{}) bool {
	return calls != nil && !closed(calls[i]) || c.health.failures[i].Load() > 0
}

// takeIn takes in the watches set late that are.
func (ws watches) takeIn() {
	for i := range ws {
		ws[i].takeIn()
	}
}

func (ws watches) stop() {
	for i := range ws {
		ws[i].end()
	}
}

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
// fired, and of those still being set, for a wait to wake by, and counts
// those that fired.
func (ws watches) wake(chans []<-chan struct{}) ([]<-chan struct{}, int) {
	fired := 0
	for i := range ws {
		if ws[i].takeIn(); ws[i].fired() {
			fired++
		} else if l := ws[i].late; l != nil {
			chans = append(chans, l.ready) // to wake by the watch once set
		} else {
			chans = append(chans, ws[i].changed...)
		}
	}
	return chans, fired
}
