package redlock

import (
	"context"
	"fmt"
	"time"

	"github.com/goredlock/goredlock/keyserver"
)

// acquire makes attempts until one is granted, the retries run out, or the
// votes say retrying is pointless: a quorum of refusals under
// untilKnownHeld (DoOrSkip skips then), or failures that cannot heal.
// Acquire and Do (retries under earliest) wait in the key's line of this
// client once refused, or at once when others wait there already (see
// line); between attempts, they wait for a release (see await).
func (c *Client) acquire(ctx context.Context, o *options, name string, ttl time.Duration, retries int, r rule) (l *Lock, err error) {
	if err := checkLock(o, name, ttl); err != nil {
		return nil, err
	}
	var (
		key     = o.keyPrefix + name
		s       = series{began: c.clock.Now()}
		last    tally
		attempt int
		q       *line
		w       *waiter
	)
	if c.hooks.Acquired != nil {
		began := c.clock.Now()
		defer func() {
			c.hooks.Acquired(ctx, Acquisition{Name: name, Attempts: attempt, Duration: c.clock.Since(began), Err: err})
		}()
	}
	defer func() {
		if l == nil {
			c.abandon(ctx, o, name, key, ttl, &s)
		}
		if q != nil {
			c.leave(q, w, l)
		}
	}()
	queued := r == earliest && retries != 0
	if queued && c.lineFor(key) != nil { // others wait: no overtaking them
		var front bool
		if q, w, front = c.join(key, retries); !front {
			if attempt, err = c.awaitTurn(ctx, name, q, w); err != nil {
				return nil, err
			}
		}
	}
	for attempt++; ; attempt++ {
		if err := ctx.Err(); err != nil {
			attempt--
			return nil, notAcquired(name, attempt, last, err)
		}
		final := retries >= 0 && attempt > retries
		if held, _ := q.heldHere(c.clock.Now()); held {
			// A call of this client holds the lock: every server would
			// refuse. Wait for its release; a wait that the retry delay
			// ends counts as a refused attempt, of the front's only, as
			// the lock is moving along the line.
			if err := c.await(ctx, o, q, tally{}); err != nil {
				return nil, notAcquired(name, attempt-1, last, err)
			}
			if held, _ := q.heldHere(c.clock.Now()); !held {
				attempt--
				continue
			}
			last = tally{n: len(c.servers), refused: len(c.servers)}
			if final {
				return nil, notAcquired(name, attempt, last, nil)
			}
			continue
		}
		if q != nil {
			c.arm(ctx, &q.watch, key, o.timeoutFor(ttl), last, true)
		}
		if !s.kept {
			s.tails = q.handOver()
		}
		l, t, err := c.attempt(ctx, o, name, key, ttl, r, attempt, &s, !final)
		if l != nil || err != nil {
			return l, err
		}
		last = t
		if q != nil {
			q.refused(t)
		}
		if r == untilKnownHeld && t.skip(attempt, final) {
			err := notAcquired(name, attempt, last, nil)
			err.skip = true
			return nil, err
		}
		if t.hopeless() || final {
			return nil, notAcquired(name, attempt, last, ctx.Err())
		}
		if queued && q == nil {
			var front bool
			if q, w, front = c.join(key, retries); !front {
				spent, err := c.awaitTurn(ctx, name, q, w)
				if err != nil {
					return nil, err
				}
				attempt += spent
				continue
			}
		}
		if q != nil && q.watch.chans == nil {
			// A release between the refusal and the watch goes unheard:
			// the wait then ends by the holder's TTL or the retry delay.
			c.arm(ctx, &q.watch, key, o.timeoutFor(ttl), t, false)
		}
		if err := c.await(ctx, o, q, t); err != nil {
			return nil, notAcquired(name, attempt, last, err)
		}
	}
}

// series is what the attempts of one call share. Each attempt draws a
// fresh token, so that it never waits for the calls of the one before,
// which may hang on a server that stopped answering; every token carries
// the time the call began (its rank). An attempt that kept the servers
// that granted it (see tally.keep) passes its token on instead, and the
// next attempt's calls follow its calls, server by server, as the calls of
// one token must.
type series struct {
	began time.Time
	token string
	// tails holds per server a channel closed once the call the next
	// attempt's call there must follow has finished: the last attempt's
	// when it kept its servers, or the release of the lock this client
	// held before (see line.after). nil when there are none.
	tails []<-chan struct{}
	kept  bool // the last attempt kept the servers that granted it
}

// abandon gives back the servers that the last attempt of a call kept,
// when the call ends without the lock.
func (c *Client) abandon(ctx context.Context, o *options, name, key string, ttl time.Duration, s *series) {
	if !s.kept {
		return
	}
	s.kept = false
	if c.enter() != nil {
		return // closed: the keys run out with their TTL
	}
	defer c.exit()
	rctx, cancel := c.detach(ctx, o.timeoutFor(ttl))
	defer cancel()
	f := fan{op: opRelease, name: name, key: key, token: s.token, timeout: o.timeoutFor(ttl), after: s.tails}
	res := c.fanOut(rctx, f)
	c.settle(rctx, &f, &res, false)
}

// attempt is one round of the algorithm: Acquire on every server, and the
// lock if a quorum granted it with validity beyond the loss margin left.
// Otherwise the token is released everywhere, unless mayKeep and the
// refusals say the others will give way (tally.keep). It returns once the
// votes are in and the servers that granted have been cleaned up; servers
// that did not answer are cleaned up in the background.
func (c *Client) attempt(ctx context.Context, o *options, name, key string, ttl time.Duration, r rule, number int, s *series, mayKeep bool) (*Lock, tally, error) {
	if err := c.enter(); err != nil {
		return nil, tally{}, err
	}
	defer c.exit()
	if !s.kept { // a fresh token: no earlier call of it to wait for
		token, err := o.newToken(s.began)
		if err != nil {
			return nil, tally{}, fmt.Errorf("redlock: generating a token: %w", err)
		}
		s.token = token
	}
	f := fan{op: opAcquire, name: name, key: key, token: s.token, ttl: ttl, timeout: o.timeoutFor(ttl), rule: r, undo: true,
		after: s.tails, holders: true}
	if o.fencing {
		f.op = opAcquireFenced
	}
	start := c.clock.Now()
	res := c.fanOut(ctx, f)
	t := res.tally
	margin := o.marginFor(ttl)
	granted := t.won() && validity(ttl, c.clock.Since(start), o.driftFactor) > margin
	var fence uint64
	if granted && o.fencing {
		// The token is drawn while the keys are held, before the verdict:
		// a failure undoes the grant like any other.
		var ft tally
		if fence, ft = c.fence(ctx, o, name, key, ttl, t.maxN); fence == 0 {
			granted, t = false, ft
		}
		granted = granted && validity(ttl, c.clock.Since(start), o.driftFactor) > margin
	}
	elapsed := c.clock.Since(start)
	kept := !granted && mayKeep && !t.won() && t.keep()
	c.settle(ctx, &f, &res, !granted && !kept)
	s.tails, s.kept = res.done, kept
	c.logVotes(opAcquire, name, t)
	if c.hooks.Attempt != nil {
		c.hooks.Attempt(ctx, Attempt{Name: name, Number: number, Servers: t.n, Granted: t.granted, Refused: t.refused,
			Failed: len(t.errs), Duration: elapsed, OK: granted})
	}
	if !granted {
		if t.won() {
			c.logger.Warn("redlock: quorum came too late to leave validity beyond the loss margin",
				"lock", name, "validity", validity(ttl, elapsed, o.driftFactor), "loss_margin", margin)
		}
		if o.fencing && t.maxN >= keyserver.MaxFence {
			return nil, t, fenceErr(name)
		}
		return nil, t, nil
	}
	return newLock(c, o, grant{name: name, key: key, token: s.token, ttl: ttl, start: start, tails: res.done, fence: fence, ctx: ctx}), t, nil
}
