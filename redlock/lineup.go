package redlock

import (
	"context"
	"errors"
	"math"
	"sync"
	"time"
)

// lineup is a client's waiting calls for one key, in rank order: the calls
// of one process join the servers' lines with the attempts of the call
// ahead, not with a refused attempt each ("Lineups" in docs/design.md).
type lineup struct {
	key   string
	mu    sync.Mutex
	calls []*waiting // by rank; calls[0] is the front
	gone  bool       // removed from the client's map: joiners make a new one
	last  tally      // the votes of the front's last refused attempt
	// progress is when a call of the lineup last saw the lock move: it
	// renews the patience of the calls waiting behind.
	progress time.Time
}

// moved records that a call of q saw the lock move at now.
func (q *lineup) moved(now time.Time) {
	q.mu.Lock()
	if now.After(q.progress) {
		q.progress = now
	}
	q.mu.Unlock()
}

// waiting is one call in a lineup.
type waiting struct {
	rank rank
	// wake is signalled when the call's place changed: it became the
	// front, was put in the servers' lines, or is no longer the front.
	wake chan struct{}
	// inLine is set once an attempt put the call in the servers' lines,
	// its own or the one ahead's. Guarded by the lineup's mu.
	inLine bool
}

// signal wakes w without blocking.
func (w *waiting) signal() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// joinLineup puts a call ranked r in key's lineup, making the lineup when
// asked to (the call was refused) and when there is none, and returns the
// lineup and the call's place; nil when there is no lineup to join. A call
// that has not asked the servers yet (fresh) takes a rank after the last
// call's, and may so change r.
func (c *Client) joinLineup(key string, r *rank, fresh, create bool) (*lineup, *waiting) {
	for {
		v, ok := c.lineups.Load(key)
		if !ok {
			if !create {
				return nil, nil
			}
			v, _ = c.lineups.LoadOrStore(key, &lineup{key: key})
		}
		q := v.(*lineup)
		q.mu.Lock()
		if q.gone {
			q.mu.Unlock()
			c.lineups.CompareAndDelete(key, q)
			continue
		}
		if n := len(q.calls); fresh && n > 0 {
			if last := q.calls[n-1].rank; !last.before(*r) {
				*r = last.next()
			}
		}
		w := &waiting{rank: *r, wake: make(chan struct{}, 1), inLine: !fresh}
		i := len(q.calls)
		for i > 0 && w.rank.before(q.calls[i-1].rank) {
			i--
		}
		q.calls = append(q.calls, nil)
		copy(q.calls[i+1:], q.calls[i:])
		q.calls[i] = w
		if i == 0 && len(q.calls) > 1 {
			q.calls[1].signal() // no longer the front: it will see
		}
		q.mu.Unlock()
		return q, w
	}
}

// leave takes w out of q; the next call, if w was the front, becomes it.
func (c *Client) leaveLineup(q *lineup, w *waiting) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for i, x := range q.calls {
		if x != w {
			continue
		}
		q.calls = append(q.calls[:i], q.calls[i+1:]...)
		if i == 0 && len(q.calls) > 0 {
			q.calls[0].signal()
		}
		break
	}
	if len(q.calls) == 0 {
		q.gone = true
		c.lineups.CompareAndDelete(q.key, q)
	}
}

// next returns the rank of the first call behind w that no attempt has
// put in the servers' lines yet, and marks it put there: the attempt w is
// about to make will; that call is woken to wait there.
func (q *lineup) next(w *waiting) (rank, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	w.inLine = true
	for i, x := range q.calls {
		if x == w {
			for _, y := range q.calls[i+1:] {
				if !y.inLine {
					y.inLine = true
					y.signal()
					return y.rank, true
				}
			}
			break
		}
	}
	return rank{}, false
}

// inLine reports whether w was put in the servers' lines.
func (q *lineup) inLine(w *waiting) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return w.inLine
}

// awaitFront waits until w is the front of q or was put in the servers'
// lines, or the call's patience or ctx ends. The patience of a call
// behind others of its client is its retries × the retry delay for each of
// them and for its own turn, counted again whenever the lineup moves or a
// call of it sees the lock move.
func (a *acquisition) awaitFront(ctx context.Context, q *lineup, w *waiting) error {
	c := a.c
	since, seen := c.clock.Now(), -1
	for {
		ahead := q.ahead(w)
		if ahead == 0 || q.inLine(w) {
			return nil
		}
		wake := []<-chan struct{}{w.wake, c.closing.Done()}
		if a.retries < 0 {
			if err := c.clock.SleepOrWake(ctx, time.Duration(math.MaxInt64), wake); err != nil {
				return err
			}
			continue
		}
		q.mu.Lock()
		if q.progress.After(since) {
			since = q.progress
		}
		q.mu.Unlock()
		if seen >= 0 && ahead < seen {
			since = c.clock.Now()
		}
		seen = ahead
		deadline := since.Add(time.Duration(a.retries) * a.o.retryDelay * time.Duration(ahead+1))
		if !c.clock.Now().Before(deadline) {
			q.mu.Lock()
			a.last = q.last
			q.mu.Unlock()
			return errOutOfPatience
		}
		if err := c.clock.SleepOrWake(ctx, deadline.Sub(c.clock.Now()), wake); err != nil {
			return err
		}
		if c.closing.Err() != nil {
			return ErrClosed
		}
	}
}

// errOutOfPatience ends a call whose patience ran out while it waited
// behind others of its client; acquire reports it as the votes of the
// front's last refusal.
var errOutOfPatience = errors.New("out of patience")

// refused records the votes of w's refused attempt, which put it in the
// servers' lines, for the calls behind it that give up.
func (q *lineup) refused(w *waiting, t tally) {
	q.mu.Lock()
	w.inLine = true
	q.last = t
	q.mu.Unlock()
}

// ahead returns how many calls are ahead of w in q.
func (q *lineup) ahead(w *waiting) int {
	q.mu.Lock()
	defer q.mu.Unlock()
	for i, x := range q.calls {
		if x == w {
			return i
		}
	}
	return 0
}

// awaitPlace waits, before its first attempt, while a call is behind
// others of its client: until it is the front, which tries itself, or the
// attempt of a call ahead put it in the servers' lines, where it then
// waits for its turn.
func (a *acquisition) awaitPlace(ctx context.Context) error {
	if a.lineup == nil || a.attempts > 0 {
		return nil
	}
	if err := a.awaitFront(ctx, a.lineup, a.lw); err != nil {
		return a.gaveUp(err)
	}
	if !a.lineup.inLine(a.lw) || a.place != nil {
		return nil
	}
	// Its patience starts, counting the calls of its client ahead of it,
	// and it watches with a token of its rank until it draws its own.
	a.inLine = a.c.notifierMask
	if a.token == "" {
		a.token = a.rank.token()
	}
	a.outOfPatience()
	if err := a.wait(ctx); err != nil {
		return a.notAcquired(err)
	}
	return nil
}

// lineUp puts a refused call that waits in line in its client's lineup,
// making one if there is none (see lineup).
func (a *acquisition) lineUp() {
	if a.lineup == nil && a.waitsInLine() {
		a.lineup, a.lw = a.c.joinLineup(a.key, &a.rank, false, true)
	}
	if a.lineup != nil {
		a.lineup.refused(a.lw, a.last)
	}
}

// gaveUp is the error of a call that stopped waiting behind others of its
// client: out of patience, ctx ended, or the client closed.
func (a *acquisition) gaveUp(err error) error {
	switch {
	case errors.Is(err, ErrClosed):
		return err
	case errors.Is(err, errOutOfPatience):
		return a.notAcquired(nil)
	}
	return a.notAcquired(err)
}
