package redlock

import (
	"context"
	"math/bits"
	"math/rand/v2"
	"time"

	"github.com/goredlock/goredlock/keyserver"
)

// linePoll is the longest a waiter waits in line without trying again:
// each try renews its place in the lines ("Lines and promises" in
// docs/design.md).
const linePoll = keyserver.LineTTL / 3

// gatherTurns is how long a waiter that was given its turn by some servers
// waits for the turns of the others before it tries anyway.
const gatherTurns = 5 * time.Millisecond

// earlier returns the earlier of two times.
func earlier(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// wait waits after a refused attempt until the next one is worth making.
func (a *acquisition) wait(ctx context.Context) error {
	if a.p != nil && !a.waitsInLine() {
		return a.waitForChange(ctx)
	}
	if a.inLine != 0 && a.waitsInALine() {
		return a.waitInLine(ctx)
	}
	d := a.o.retryWait()
	if l := a.last.left; l > 0 && l < d {
		d = l
	}
	return a.c.clock.SleepOrWake(ctx, a.untilPatience(d), []<-chan struct{}{a.c.closing.Done()})
}

// waitsInALine reports whether the call really waits in the servers'
// lines: it was put there by the call ahead of it (see queue), or the
// Notifiers that did not fail its last attempt can give it the turns it
// needs; otherwise it polls ("A quorum of turns" in docs/design.md).
func (a *acquisition) waitsInALine() bool {
	if a.attempts == 0 {
		return true
	}
	return bits.OnesCount64(a.inLine&^a.last.failers) >= a.c.turnsNeeded()
}

// turnsNeeded is how many Notifiers must give a waiter its turn before it
// tries again: a quorum, less the servers that keep no line.
func (c *Client) turnsNeeded() int {
	return max(c.quorum-(len(c.servers)-len(c.notifiers)), 1)
}

// untilPatience shortens a wait of d so that it ends when the call's
// patience does.
func (a *acquisition) untilPatience(d time.Duration) time.Duration {
	if a.retries >= 0 {
		d = max(min(d, a.patience.Sub(a.c.clock.Now())), 0)
	}
	return d
}

// waitInLine waits for the call's turn on a quorum of the servers, or for
// one of the other moments of trying again ("A quorum of turns" in
// docs/design.md), the end of its patience among them.
func (a *acquisition) waitInLine(ctx context.Context) error {
	c := a.c
	if a.watches == nil {
		a.watches = make([]watch, len(c.servers))
	}
	a.arm(ctx)
	d := linePoll
	if l := a.last.left; l > 0 && l < d {
		d = l
	}
	if _, set := a.p.(*setOps); set || len(c.notifiers) < len(c.servers) {
		// Servers that keep no line give no turn. A set's turns may come
		// from servers whose promises went to others: the ones that granted
		// an attempt that failed gave its keys on when it was undone.
		d = min(d, a.o.retryWait())
	}
	return a.awaitTurns(ctx, c.turnsNeeded(), c.clock.Now().Add(a.untilPatience(d)))
}

// awaitTurns waits until need of the call's watches have fired, or until.
// Once one has fired, it waits for the others no longer than gatherTurns:
// a release reaches the servers one by one and tells the call on each as
// it lands, so the others' word comes within moments, unless a server
// promised the key to another waiter whose refusal reached it first (then
// both try, and rank decides who keeps what: see tally.keep). Trying on
// the first word would reach servers the release has not reached yet and
// split the votes.
func (a *acquisition) awaitTurns(ctx context.Context, need int, until time.Time) error {
	c := a.c
	gathering := false
	var wake []<-chan struct{}
	for {
		if c.closing.Err() != nil {
			return nil // the attempt fails with ErrClosed
		}
		wake = append(wake[:0], c.closing.Done())
		turns := 0
		for _, w := range a.watches {
			switch {
			case !w.armed():
			case w.fired():
				turns++
			default:
				wake = append(wake, w.changed...)
			}
		}
		if turns >= need {
			return nil
		}
		now := c.clock.Now()
		if turns > 0 && !gathering {
			gathering = true
			until = earlier(until, now.Add(gatherTurns))
		}
		if !now.Before(until) {
			return nil
		}
		if err := c.clock.SleepOrWake(ctx, until.Sub(now), wake); err != nil {
			return err
		}
	}
}

// arm watches for the call's turn on every Notifier that answered the
// last attempt and has no watch armed, or one that fired or broke: a turn
// is told once. A server that is down would hold up every wait; one whose
// watch fails is waited for by the poll.
func (a *acquisition) arm(ctx context.Context) {
	c := a.c
	for _, i := range c.notifiers {
		w := &a.watches[i]
		if w.armed() && !w.fired() {
			continue
		}
		if w.stop != nil {
			w.stop()
			*w = watch{}
		}
		if failed(a.last, i) {
			continue
		}
		wctx, cancel := c.clock.WithTimeout(ctx, a.b.timeout)
		turns, stop, err := a.watchTurn(wctx, i)
		cancel()
		if err == nil {
			*w = watch{changed: turns, stop: stop}
		}
	}
}

// watchTurn watches for the call's turn on Notifier i: in the line of
// the lock's key, or in the lines of a set's keys that server does not
// keep promised to the call already.
func (a *acquisition) watchTurn(ctx context.Context, i int) ([]<-chan struct{}, func(), error) {
	ns := a.c.servers[i].(keyserver.Notifier)
	if so, ok := a.p.(*setOps); ok {
		return so.watchTurns(ctx, ns, a.token, a.last.promisedOn(i))
	}
	turn, stop, err := ns.WatchTurn(ctx, a.key, a.token)
	return []<-chan struct{}{turn}, stop, err
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
