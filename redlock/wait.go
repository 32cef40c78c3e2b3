package redlock

import (
	"context"
	"errors"
	"math"
	"math/bits"
	"math/rand/v2"
	"time"
)

// wait is the one wait after a refused attempt: for its turn in line, a
// change its watches announce, or else the retry delay.
func (a *acquisition) wait(ctx context.Context) error {
	if !a.kind.traits().oneLine && !a.waitsInLine() {
		return a.waitForChange(ctx)
	}
	// In line if the call ahead put it there, or it can be given its turns:
	// it waits for its turn on a quorum of the servers, or the other moments
	// of trying again ("A quorum of turns" in docs/design.md); else it polls.
	c := a.c
	if a.inLine != 0 && (a.attempts == 0 || bits.OnesCount64(a.inLine&^a.last.failers) >= c.turnsNeeded()) {
		a.watch(ctx, true)
		d := renewEvery // trying again renews its place ("A quorum of turns" in docs/design.md)
		if !a.kind.traits().oneLine || len(c.notifiers) < len(c.servers) || a.watches.armed() < c.turnsNeeded() {
			// Servers without a line or a working watch give no turn; a set's
			// undone attempt gave its keys on.
			d = min(d, a.o.retryWait())
		}
		return a.awaitTurns(ctx, c.turnsNeeded(), c.clock.Now().Add(a.untilPatience(d)))
	}
	until := c.clock.Now().Add(a.untilPatience(a.o.retryWait()))
	wake := []<-chan struct{}{c.closing.Done()}
	if a.passable() {
		wake = append(wake, a.qw.wake) // woken early only by a lock of its client passed to it (handover.go)
	}
	for {
		if err := c.clock.SleepOrWake(ctx, until.Sub(c.clock.Now()), wake); err != nil {
			return err
		}
		if !a.passable() || c.closing.Err() != nil || a.queue.handed(a.qw) || !c.clock.Now().Before(until) {
			return nil
		}
	}
}

// gatherTurns is how long a waiter that was given its turn by some servers
// waits for the turns of the others before it tries anyway.
const gatherTurns = 5 * time.Millisecond

// turnsNeeded is how many Notifiers must give a waiter its turn before it
// tries again: a quorum, less the servers that keep no line.
func (c *Client) turnsNeeded() int {
	return max(c.quorum-(len(c.servers)-len(c.notifiers)), 1)
}

// untilPatience cuts a wait of d short at the holder's TTL the last
// refusal reported, or at the end of the call's patience.
func (a *acquisition) untilPatience(d time.Duration) time.Duration {
	if l := a.last.left; l > 0 {
		d = min(d, l)
	}
	if a.retries >= 0 {
		d = max(min(d, a.patience.Sub(a.c.clock.Now())), 0)
	}
	return d
}

// awaitTurns waits until need of the call's watches fired, or until. Once
// one fired it gathers the others' word for at most gatherTurns: trying on
// the first would split the votes ("A quorum of turns" in docs/design.md).
func (a *acquisition) awaitTurns(ctx context.Context, need int, until time.Time) error {
	c := a.c
	gathering := false
	var wake []<-chan struct{}
	for {
		if c.closing.Err() != nil {
			return nil // the attempt fails with ErrClosed
		}
		if a.passable() && a.queue.handed(a.qw) {
			return nil // a lock of its client was passed to it (handover.go)
		}
		wake = append(wake[:0], c.closing.Done())
		if a.passable() {
			wake = append(wake, a.qw.wake)
		}
		var turns int
		if wake, turns = a.watches.wake(wake); turns >= need {
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

// watch arms the call's watches (see watches.arm) after its last attempt,
// and reports how many it renewed had fired.
func (a *acquisition) watch(ctx context.Context, renew bool) int {
	return a.watchAfter(ctx, &a.last, a.tails.done, renew)
}

// watchAfter arms the call's watches after the attempt that tallied last,
// whose calls are still out where calls says.
func (a *acquisition) watchAfter(ctx context.Context, last *tally, calls []<-chan struct{}, renew bool) int {
	return a.watches.arm(ctx, a.c, watchOf{kind: a.kind, name: a.name, key: a.key, token: a.token, timeout: a.b.timeout}, last, calls, renew)
}

// prewatches reports whether the call watches the servers already while
// next behind its queue's front ("How primitives wait" in docs/design.md).
func (a *acquisition) prewatches() bool {
	return !a.kind.traits().turns && a.mode == waits && a.retries != 0 && a.kind.together() == 1
}

// prewatch arms (or renews those due) the watches of w, next behind the
// front of q, with a token of its rank until it draws its own. It reports
// whether one fired, and else how soon the next is due to be set anew.
func (a *acquisition) prewatch(ctx context.Context, q *queue, w *queued) (told bool, renewIn time.Duration) {
	// Not having heard the servers yet, it arms by the front's last
	// refusal (see watches.arm).
	q.mu.Lock()
	front, calls := tally{answered: q.last.answered, errs: q.last.errs}, q.lastCalls
	q.mu.Unlock()
	if a.watches == nil {
		if a.token == "" {
			a.token = a.rank.token()
		}
		a.watchAfter(ctx, &front, calls, false)
		q.stamp(&w.watched)
	}
	for {
		now := a.c.clock.Now()
		renewIn = renewEvery
		a.watches.takeIn()
		for _, pw := range a.watches {
			if pw.fired() {
				return true, 0
			}
			if pw.armed() {
				renewIn = min(renewIn, renewEvery-now.Sub(pw.at))
			}
		}
		if renewIn > 0 {
			return false, renewIn
		}
		a.watchAfter(ctx, &front, calls, false) // those due; one that fired since the look is looked at next
	}
}

// waitForChange waits after a primitive's refusal ("How primitives wait"
// in docs/design.md). Having renewed a fired watch it looks again rather
// than waits: the server may have told another waiter meanwhile.
func (a *acquisition) waitForChange(ctx context.Context) error {
	if a.watches == nil {
		// Watch, then look again, so a release before the watch is seen.
		a.watch(ctx, true)
		return nil
	}
	// Its own undo must not wake it: it watches anew where it was undone.
	a.watches.takeIn()
	for i := range a.watches {
		if a.undone&bit(i) != 0 && a.watches[i].stop != nil {
			a.watches[i].anew = true
		}
	}
	a.undone = 0
	a.watch(ctx, false)
	if a.last.granted > 0 && !a.last.won() {
		// A split vote: back off a moment so contenders come back apart.
		d := time.Duration(rand.Int64N(int64(a.o.retryDelay/4)+1)) + 1
		if err := a.c.clock.SleepOrWake(ctx, d, []<-chan struct{}{a.c.closing.Done()}); err != nil {
			return err
		}
	}
	if a.watch(ctx, true) > 0 {
		return nil // a watch fired since the attempt, and is renewed
	}
	d := a.untilPatience(min(a.o.retryWait(), a.kind.maxWait(), renewEvery))
	_, need := a.watches.told(a.c.quorum)
	return a.awaitTurns(ctx, need, a.c.clock.Now().Add(d))
}

// awaitFront waits until w is at the front of q (with no pass to wait
// for) or in the servers' lines, or until its patience or ctx ends. A call
// that prewatches goes to try once told.
func (a *acquisition) awaitFront(ctx context.Context, q *queue, w *queued) error {
	c := a.c
	since, seen := c.clock.Now(), -1
	for {
		ahead, held, done := q.place(w, c.clock.Now())
		if done {
			return nil
		}
		wake := []<-chan struct{}{w.wake, c.closing.Done()}
		sleep := time.Duration(math.MaxInt64)
		if !held.IsZero() {
			sleep = held.Sub(c.clock.Now())
		}
		if ahead == 1 && a.prewatches() {
			told, renewIn := a.prewatch(ctx, q, w)
			if told {
				return nil
			}
			var fired int
			sleep = renewIn
			if wake, fired = a.watches.wake(wake); fired > 0 {
				sleep = 0 // one fired since prewatch looked: it looks again at once
			}
		}
		if a.retries >= 0 { // patience: retries × delay per call ahead, counted from the queue's last move
			q.mu.Lock()
			since = later(q.progress, since)
			q.mu.Unlock()
			if seen >= 0 && ahead < seen {
				since = c.clock.Now()
			}
			seen = ahead
			deadline := since.Add(a.patienceFor(ahead))
			if !c.clock.Now().Before(deadline) {
				q.mu.Lock()
				a.last = q.last
				q.mu.Unlock()
				return errOutOfPatience
			}
			sleep = min(sleep, deadline.Sub(c.clock.Now()))
		}
		if err := c.clock.SleepOrWake(ctx, sleep, wake); err != nil {
			return err
		}
		if c.closing.Err() != nil {
			return ErrClosed
		}
	}
}

// awaitPlace waits, before the first attempt, while the call is behind
// others of its client.
func (a *acquisition) awaitPlace(ctx context.Context) error {
	if a.queue == nil || a.attempts > 0 {
		return nil
	}
	if err := a.awaitFront(ctx, a.queue, a.qw); err != nil { // it gave up: out of patience, ctx ended, or the client closed
		switch {
		case errors.Is(err, ErrClosed):
			return err
		case errors.Is(err, errOutOfPatience):
			err = nil
		}
		return a.notAcquired(err)
	}
	switch {
	case !a.kind.traits().oneLine:
		if !a.prewatches() || a.watches == nil {
			return nil
		}
		turns, need := a.watches.told(a.c.quorum)
		if turns > 0 || need < a.c.quorum || !a.queue.heldSince(a.qw) {
			if turns == 0 || turns >= need {
				return nil
			}
			// Told by some, it gathers the others' word first.
			if err := a.awaitTurns(ctx, need, a.c.clock.Now().Add(gatherTurns)); err != nil {
				return a.notAcquired(err)
			}
			return nil
		}
		// Untold while a quorum of watches stands, which the call ahead's
		// hold postdates (heldSince): a look would only be refused.
	case !a.queue.inLine(a.qw) || a.watches != nil || a.passable() && a.queue.handed(a.qw):
		return nil
	default:
		// Its patience starts here, counting the calls of its client ahead.
		a.inLine = a.c.notifierMask
		if a.token == "" {
			a.token = a.rank.token()
		}
	}
	a.outOfPatience()
	if err := a.wait(ctx); err != nil {
		return a.notAcquired(err)
	}
	return nil
}

// queueUp records a refused attempt in the call's queue, which a lock's
// call that waits in line makes if there is none.
func (a *acquisition) queueUp() {
	if a.queue == nil && a.waitsInLine() {
		a.queue, a.qw = a.c.joinQueue(a.key, a.kind.together(), &a.rank, false, true)
		a.takesPasses()
	}
	if a.queue != nil {
		a.queue.refused(a.qw, a.last, a.tails.done, a.kind.traits().oneLine)
	}
}

// refused returns the call's error if it ends after a refused attempt.
func (a *acquisition) refused(ctx context.Context) error {
	last := a.outOfPatience()
	if a.mode == skips && a.last.skip(a.attempts, last) {
		err := a.notAcquired(nil)
		err.skip = true
		return err
	}
	if a.last.hopeless() || last {
		return a.notAcquired(ctx.Err())
	}
	return nil
}

// outOfPatience reports, after a refused attempt, whether the call has
// waited as long as its retries allow ("Patience" in docs/design.md).
func (a *acquisition) outOfPatience() bool {
	if a.retries < 0 {
		return false
	}
	now := a.c.clock.Now()
	ahead := a.last.ahead
	if q := a.queue; q != nil {
		q.mu.Lock()
		ahead = max(ahead, q.aheadLocked(a.qw))
		q.mu.Unlock()
	}
	// In a lock's line, a new holder came from ahead of the call; its key
	// set anew there is its holder extending it, which is no move.
	moved := ahead < a.ahead || !(a.kind.traits().oneLine && a.inLine != 0) && a.setAnew(now)
	if a.patience.IsZero() || moved {
		a.patience = later(a.patience, now.Add(a.patienceFor(ahead)))
		if q := a.queue; moved && q != nil {
			q.mu.Lock()
			q.progress = later(now, q.progress)
			q.mu.Unlock()
		}
	}
	a.ahead, a.left, a.refusedAt = ahead, a.last.left, now
	return !now.Before(a.patience)
}

// patienceFor is the patience of a call with ahead calls before it.
func (a *acquisition) patienceFor(ahead int) time.Duration {
	return time.Duration(a.retries) * a.o.retryDelay * time.Duration(ahead+1)
}

// setAnew reports whether the key that refused the last attempt was set
// anew since the refusal before, by its TTL left.
func (a *acquisition) setAnew(now time.Time) bool {
	if a.left <= 0 || a.last.left <= 0 {
		return false
	}
	return a.last.left > a.left-now.Sub(a.refusedAt)+a.b.timeout
}

// notAcquired is the call's error, with the votes of its last attempt.
func (a *acquisition) notAcquired(ctxErr error) *QuorumError {
	sentinel := ErrNotAcquired
	if a.last.heldElsewhere() {
		sentinel = ErrHeldElsewhere
	}
	return newQuorumError("acquire", a.kind.name(), a.name, a.attempts, a.last, ctxErr, sentinel)
}
