package redlock

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/goredlock/goredlock/internal/clock"
)

// errServerDown is the vote of a server whose breaker is open.
var errServerDown = errors.New("not called: key server down")

// errNotSent is the vote of a call that was not sent because the lock's
// earlier call to the server had not ended by the call's deadline (see
// callAfter). That earlier call counts for or against the server itself.
var errNotSent = errors.New("not sent: an earlier call to the server has not ended")

const (
	tripAfter = 3 // failures in a row that open a breaker ...
	// ... when they span this much: a server that is only slow (a short
	// server timeout on a loaded machine) still answers some calls in it.
	tripQuiet    = 500 * time.Millisecond
	firstBackoff = 100 * time.Millisecond
	maxBackoff   = time.Second
	// staleProbe: an unanswered probe's caller may have been cancelled,
	// which says nothing of the server, so another goes after this.
	staleProbe = 5 * time.Second
)

// breaker is one server's. After a failed dial, or tripAfter failures in
// a row over tripQuiet, its votes fail at once until a probe finds it
// back: no redial per call ("Failed servers" in docs/design.md).
type breaker struct {
	open atomic.Bool // read by every call; the rest under mu

	mu      sync.Mutex
	next    time.Time // when the next probe may go
	probe   time.Time // when the probe in flight went; zero when none
	streak  time.Time // when the failures in a row began to come
	backoff time.Duration
	down    error // the votes' error while open: errServerDown and the failure that opened it
}

// allow returns nil when a call may be made to the server now (the
// breaker is closed, or the call is its probe), else the vote's error.
func (b *breaker) allow(clk clock.Clock) error {
	if !b.open.Load() {
		return nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.open.Load() {
		return nil
	}
	now := clk.Now()
	if now.Before(b.next) || (!b.probe.IsZero() && now.Sub(b.probe) < staleProbe) {
		return b.down
	}
	b.probe = now
	return nil
}

// answered records a call's success: the server is back.
func (b *breaker) answered() {
	if !b.open.Load() {
		return
	}
	b.mu.Lock()
	b.open.Store(false)
	b.probe, b.backoff, b.down, b.streak = time.Time{}, 0, nil, time.Time{}
	b.mu.Unlock()
}

// cancelled records that a call was cancelled by its caller, which says
// nothing of the server: if it was the probe, the next call probes.
func (b *breaker) cancelled() {
	if !b.open.Load() {
		return
	}
	b.mu.Lock()
	b.probe = time.Time{}
	b.mu.Unlock()
}

// failed records a call's failure, the failures'th in a row, and opens the
// breaker when that is enough, or lets it wait longer for the next probe.
// silent is how long the server had answered nothing when the call
// failed (up to the call's timeout, when it timed out): the streak began
// that long ago, so that calls to a server that stopped, all timing out
// together a timeout of tripQuiet or more after it did, open its breaker
// then, not once later calls spanned tripQuiet too. A server that
// answered any call in tripQuiet is not cut.
func (b *breaker) failed(clk clock.Clock, failures int64, err error, silent time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := clk.Now()
	if !b.open.Load() {
		if began := now.Add(-silent); failures == 1 || b.streak.IsZero() || began.Before(b.streak) {
			b.streak = began
		}
		if !dialFailed(err) && (failures < tripAfter || now.Sub(b.streak) < tripQuiet) {
			return
		}
		b.open.Store(true)
		b.backoff = firstBackoff
	} else if !b.probe.IsZero() {
		b.backoff = min(2*b.backoff, maxBackoff)
	} else {
		return // a straggler failing while the breaker waits: no news
	}
	b.probe = time.Time{}
	// Made once per opening or failed probe, not per vote: a lock with a
	// server down fails a vote on it at every call.
	b.down = fmt.Errorf("%w (probed every %v at most): %w", errServerDown, b.backoff, err)
	// Jittered, so clients that lost a server together do not probe it together.
	b.next = now.Add(b.backoff/2 + time.Duration(rand.Int64N(int64(b.backoff/2)+1)))
}

// dialFailed reports whether err is a failure to connect: the server is
// not there, and every call would fail the same way.
func dialFailed(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}
