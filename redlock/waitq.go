package redlock

import (
	"context"
	"sync"
	"time"
)

// line is the queue of one client's Acquire calls waiting for one key.
// Only its front makes attempts; the others wait their turn here, at no
// cost to the servers. Without it, every waiter of a process would try at
// every release: each try costs a call per server, and waiters that try at
// once split the vote among themselves so that none gets a quorum. With
// it, a process has one contender per key, its waiters get the lock in the
// order they came, and a release by this process hands the lock on at
// once, without waiting for the servers to announce it.
//
// A line exists while it has waiters: the first refused attempt makes one,
// and the last waiter to leave removes it. Calls that find a line join its
// back instead of trying first, so that a holder that releases and asks
// again does not overtake the waiters.
type line struct {
	key string
	mu  sync.Mutex
	// waiters in the order they came; one of them, the first that has
	// not given up, is the front, which makes the attempts.
	waiters []*waiter
	// gone is set when the line left the client's map; a call that joins
	// a gone line makes a new one.
	gone bool
	// heldUntil is set when a front of this line was granted the lock,
	// to the lock's Until, and cleared by its release: until then, the
	// next front waits for that release instead of asking the servers,
	// which would refuse it. A lock that ends without a release (lost,
	// or extended past it) is left to the servers to judge once the time
	// has passed.
	heldUntil time.Time
	// released is closed, and replaced, by each release of key by this
	// client; after holds per server a channel closed once that release's
	// call there finished, nil when all had: the next attempt's calls
	// follow them, so that they are not refused by a release still on its
	// way (it returned at a quorum).
	released chan struct{}
	after    []<-chan struct{}
	// watch is the front's watch of key on the servers that notify; the
	// front in turn owns it. It is armed after a refusal and stopped when
	// a front is granted the lock: while this client holds it, its own
	// release is the news, and every release would only fire the watch.
	watch watch
}

// waiter is one call waiting in a line.
type waiter struct {
	turn    chan struct{} // closed when the waiter becomes the front or must give up
	front   bool          // set before turn is closed to make it the front
	retries int           // its retry count; -1 for no limit
	// spent counts the attempts made by the fronts ahead of it that were
	// refused: each counts against its own retries, so that a call waits
	// no longer in a line than it would have retried alone. Attempts that
	// were granted are progress and count nothing. last is the tally of
	// the last of them; giveUp is set, before turn is closed, when spent
	// exceeds retries.
	spent  int
	last   tally
	giveUp bool
}

// lineFor returns key's line if there is one.
func (c *Client) lineFor(key string) *line {
	if q, ok := c.lines.Load(key); ok {
		return q.(*line)
	}
	return nil
}

// join puts a waiter at the back of key's line, making the line if there
// is none, and reports whether the waiter is the front: nobody else is.
func (c *Client) join(key string, retries int) (*line, *waiter, bool) {
	w := &waiter{turn: make(chan struct{}), retries: retries}
	for {
		v, _ := c.lines.LoadOrStore(key, &line{key: key, released: make(chan struct{})})
		q := v.(*line)
		q.mu.Lock()
		if q.gone {
			q.mu.Unlock()
			continue
		}
		q.waiters = append(q.waiters, w)
		w.front = q.front() == nil
		front := w.front
		q.mu.Unlock()
		return q, w, front
	}
}

// awaitTurn waits until w is the front of q, and returns how many refused
// attempts were made while it waited. It fails when the context ends, or
// when those attempts used up w's retries; the caller must still leave the
// line.
func (c *Client) awaitTurn(ctx context.Context, name string, q *line, w *waiter) (int, error) {
	var ctxErr error
	select {
	case <-w.turn:
	case <-ctx.Done():
		ctxErr = ctx.Err()
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if ctxErr != nil || w.giveUp {
		return w.spent, notAcquired(name, w.spent, w.last, ctxErr)
	}
	return w.spent, nil
}

// refused records an attempt of the front of q that was refused: it counts
// against the retries of every waiter behind, and those whose retries it
// used up are told to give up.
func (q *line) refused(t tally) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, w := range q.waiters {
		if w.giveUp || w.front {
			continue
		}
		w.spent++
		w.last = t
		if w.retries >= 0 && w.spent > w.retries {
			w.giveUp = true
			close(w.turn)
		}
	}
}

// leave takes w out of q: l is the lock it leaves holding, if any. When w was the front, the first waiter that has not given up
// becomes it; when w was the last, the line is removed and its watch
// stopped.
func (c *Client) leave(q *line, w *waiter, l *Lock) {
	granted := l != nil
	q.mu.Lock()
	at := -1
	for i, x := range q.waiters {
		if x == w {
			at = i
			break
		}
	}
	if at < 0 {
		q.mu.Unlock()
		return
	}
	q.waiters = append(q.waiters[:at], q.waiters[at+1:]...)
	if w.front && granted {
		q.heldUntil = l.Until()
	}
	if w.front {
		for _, x := range q.waiters {
			if !x.giveUp {
				x.front = true
				close(x.turn)
				break
			}
		}
	}
	var stop watch
	if len(q.waiters) == 0 {
		q.gone = true
		c.lines.Delete(q.key)
	}
	if q.gone || (w.front && granted) {
		stop, q.watch = q.watch, watch{}
	}
	q.mu.Unlock()
	stop.stop()
}

// front returns the waiter that makes the attempts, if any. q.mu must be
// held.
func (q *line) front() *waiter {
	for _, w := range q.waiters {
		if w.front {
			return w
		}
	}
	return nil
}

// releasedLocally tells key's line, if any, that this client's holder of
// key let it go; its front tries at once when the keys were deleted
// (deleted), and otherwise (a minimum hold) by the holder's TTL. tails
// are the release's calls, per server (see line.after).
func (c *Client) releasedLocally(key string, deleted bool, tails []<-chan struct{}) {
	q := c.lineFor(key)
	if q == nil {
		return
	}
	q.mu.Lock()
	q.heldUntil = time.Time{}
	if deleted {
		close(q.released)
		q.released = make(chan struct{})
		q.after = tails
	}
	q.mu.Unlock()
}

// handOver returns, once, the calls of the last release that the next
// attempt must follow (see line.after). A nil q has none.
func (q *line) handOver() []<-chan struct{} {
	if q == nil {
		return nil
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	after := q.after
	q.after = nil
	return after
}

// heldHere reports whether a front of q holds the lock at now, and the
// channel its release closes. A nil q is no line: nothing is held.
func (q *line) heldHere(now time.Time) (bool, <-chan struct{}) {
	if q == nil {
		return false, nil
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	return now.Before(q.heldUntil), q.released
}
