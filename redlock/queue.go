package redlock

import (
	"errors"
	"slices"
	"sync"
	"time"
)

// queue is a client's waiting calls for one key; the first capacity try
// on the servers ("Queues: the calls of one process" in docs/design.md).
type queue struct {
	key      string
	capacity int
	mu       sync.Mutex
	calls    []*queued // by rank
	gone     bool      // removed from the client's map: joiners make a new one
	last     tally     // the votes of the last refused attempt of a call at the front
	// lastCalls are that attempt's calls, per server (tails.done).
	lastCalls []<-chan struct{}
	// progress is when a call last saw the hold move: it renews patience.
	progress time.Time
	// tick orders the attempts of its calls and the arming of watches;
	// held is the tick of the latest attempt that won (see heldSince).
	tick, held uint64
	// holder is the token of a lock that may pass until holdUntil (see hold).
	holder    string
	holdUntil time.Time
}

// queued is one call in a queue.
type queued struct {
	rank rank
	// wake is signalled when the call's place changed.
	wake chan struct{}
	// The rest is guarded by the queue's mu. inLine: an attempt, its own
	// or the one ahead's, put the call in the servers' lines.
	inLine bool
	// tried is the queue's tick at the start of its last attempt; watched,
	// when it armed its watches before its first attempt (0: it did not).
	tried, watched uint64
	// trying: it makes an attempt, so nothing may be passed to it; taker,
	// what a lock's call needs of a pass; pass, a lock passed to it.
	trying bool
	taker  *taker
	pass   *pass
}

// signal wakes w without blocking.
func (w *queued) signal() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// joinQueue puts a call ranked r in key's queue, made if create, and
// returns the queue and its place, or nil. A fresh call (that has not asked
// the servers) takes a rank after the last call's, changing r.
func (c *Client) joinQueue(key string, capacity int, r *rank, fresh, create bool) (*queue, *queued) {
	for {
		v, ok := c.queues.Load(key)
		if !ok {
			if !create {
				return nil, nil
			}
			v, _ = c.queues.LoadOrStore(key, &queue{key: key, capacity: capacity})
		}
		q := v.(*queue)
		q.mu.Lock()
		if q.gone {
			q.mu.Unlock()
			c.queues.CompareAndDelete(key, q)
			continue
		}
		if n := len(q.calls); fresh && n > 0 {
			if last := q.calls[n-1].rank; !last.before(*r) {
				*r = last.next()
			}
		}
		w := &queued{rank: *r, wake: make(chan struct{}, 1), inLine: !fresh}
		i := len(q.calls)
		for i > 0 && w.rank.before(q.calls[i-1].rank) {
			i--
		}
		q.calls = slices.Insert(q.calls, i, w)
		if i < q.capacity && len(q.calls) > q.capacity {
			q.calls[q.capacity].signal() // out of the front: it will see
		}
		q.mu.Unlock()
		return q, w
	}
}

// leaveQueue takes w out of q, waking the call that moves up; the last to
// leave removes q unless its holder may pass (see hold). It returns a lock
// passed to w and not taken, if any.
func (c *Client) leaveQueue(q *queue, w *queued) *pass {
	q.mu.Lock()
	defer q.mu.Unlock()
	p := w.pass
	w.pass = nil
	if i := slices.Index(q.calls, w); i >= 0 {
		q.calls = append(q.calls[:i], q.calls[i+1:]...)
		if i < q.capacity && len(q.calls) >= q.capacity {
			q.calls[q.capacity-1].signal()
		}
		if i <= q.capacity && len(q.calls) > q.capacity {
			q.calls[q.capacity].signal() // now next behind the front: it may prewatch
		}
	}
	if len(q.calls) == 0 && (q.holder == "" || !c.clock.Now().Before(q.holdUntil)) {
		q.gone = true
		c.queues.CompareAndDelete(q.key, q)
	}
	return p
}

// stamp sets *at, w.tried or w.watched, to the next tick.
func (q *queue) stamp(at *uint64) {
	q.mu.Lock()
	q.tick++
	*at = q.tick
	q.mu.Unlock()
}

// heldBy records that w's last attempt won the servers.
func (q *queue) heldBy(w *queued) {
	q.mu.Lock()
	q.held = max(q.held, w.tried)
	q.mu.Unlock()
}

// heldSince reports whether an attempt of q's that began after w armed its
// watches won the servers ("How primitives wait" in docs/design.md).
func (q *queue) heldSince(w *queued) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return w.watched > 0 && q.held > w.watched
}

// next returns the rank of the first call behind w not yet in the
// servers' lines, for w's next attempt to put there, and wakes it; not one
// trying or passed a lock, which would never claim its turn there.
func (q *queue) next(w *queued) (rank, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	w.inLine = true
	if i := slices.Index(q.calls, w); i >= 0 {
		for _, y := range q.calls[i+1:] {
			if !y.inLine && !y.trying && y.pass == nil {
				y.inLine = true
				y.signal()
				return y.rank, true
			}
		}
	}
	return rank{}, false
}

// ask returns the lock passed to w, if any; otherwise it records that w
// is about to ask the servers, and is passed nothing until refused.
func (q *queue) ask(w *queued) *pass {
	q.mu.Lock()
	defer q.mu.Unlock()
	p := w.pass
	w.pass, w.trying = nil, true
	return p
}

// handed reports whether a lock was passed to w.
func (q *queue) handed(w *queued) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return w.pass != nil
}

// inLine reports whether w was put in the servers' lines.
func (q *queue) inLine(w *queued) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return w.inLine
}

// refused records w's refused attempt (its votes and calls) for the calls
// behind it that give up or watch; inLine: it put w in the servers' lines.
func (q *queue) refused(w *queued, t tally, calls []<-chan struct{}, inLine bool) {
	q.mu.Lock()
	w.inLine = w.inLine || inLine
	w.trying = false
	q.last, q.lastCalls = t, calls
	q.mu.Unlock()
}

// aheadLocked returns how many calls must leave before w reaches the
// front; 0 if w is not in q (Index -1). q.mu must be held.
func (q *queue) aheadLocked(w *queued) int {
	return max(slices.Index(q.calls, w)-q.capacity+1, 0)
}

// place tells where w stands before it asks the servers: done when it is
// to go on; else how many calls are ahead, and, at the front, until when
// it waits for a pass (handover.go).
func (q *queue) place(w *queued, now time.Time) (ahead int, until time.Time, done bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if w.inLine || w.pass != nil {
		return 0, time.Time{}, true
	}
	ahead = q.aheadLocked(w)
	if ahead > 0 {
		return ahead, time.Time{}, false
	}
	if q.holder != "" && now.Before(q.holdUntil) {
		return 0, q.holdUntil, false
	}
	return 0, time.Time{}, true
}

// errOutOfPatience ends a call whose patience ran out behind others of
// its client; it is reported with the front's last refusal's votes.
var errOutOfPatience = errors.New("out of patience")
