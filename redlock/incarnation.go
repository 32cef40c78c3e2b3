package redlock

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/goredlock/goredlock/internal/clock"
	"github.com/goredlock/goredlock/keyserver"
)

// ErrQuarantined is the error of a grant that did not count toward a
// quorum because its server is known to have lost its data (restarted
// empty, or first set up) less than the TTL ago and does not persist every
// write (see WithQuarantine). It is one of a QuorumError's Failed, as a
// *ServerError; a server that could not be asked fails with its own error.
var ErrQuarantined = errors.New("redlock: key server quarantined after a restart")

// quarantine judges grants by their servers' incarnations ("The
// quarantine of restarted servers" in docs/design.md).
type quarantine struct {
	clock clock.Clock

	judged []keyserver.Incarnator // by server; nil for a server that is not judged

	mu   sync.Mutex
	seen []sighting // by server
}

// sighting is what the client last saw of one server.
type sighting struct {
	id   string    // its incarnation's ID; "" before the first sight
	at   time.Time // when the client saw it
	back time.Time // when its data was born: at the first sight, or at a restart seen since
}

// newQuarantine returns the quarantine of servers, or nil when none of
// them is judged (see judgedIncarnator).
func newQuarantine(servers []keyserver.KeyServer, clk clock.Clock) *quarantine {
	q := &quarantine{clock: clk, judged: make([]keyserver.Incarnator, len(servers)), seen: make([]sighting, len(servers))}
	for i, s := range servers {
		q.judged[i] = judgedIncarnator(s)
	}
	if !slices.ContainsFunc(q.judged, func(is keyserver.Incarnator) bool { return is != nil }) {
		return nil
	}
	return q
}

// judgedIncarnator returns s as an Incarnator the quarantine judges, or
// nil (an in-process store cannot restart under the client).
func judgedIncarnator(s keyserver.KeyServer) keyserver.Incarnator {
	_, inProcess := s.(keyserver.InProcess)
	if is, ok := s.(keyserver.Incarnator); ok && !inProcess {
		return is
	}
	return nil
}

// quarantineRule is what a fan-out of grants needs to judge them: the
// client's quarantine (nil when off), WithQuarantine's d, and when the
// fan-out began: its answers tell of incarnations current no earlier.
type quarantineRule struct {
	q     *quarantine
	d     time.Duration
	since time.Time
}

// quarantineRule returns the rule of a call with options o.
func (c *Client) quarantineRule(o *options) quarantineRule {
	if o.quarantine < 0 || c.quarantine == nil {
		return quarantineRule{}
	}
	return quarantineRule{q: c.quarantine, d: o.quarantine, since: c.clock.Now()}
}

// answer judges server i's answer (ok, err) to a call with ttl, given its
// incarnation in or its read's error inErr: a grant counts or not; a
// refusal records the incarnation ("Which restarts" in docs/design.md).
func (r quarantineRule) answer(i int, ttl time.Duration, ok bool, err error, in keyserver.Incarnation, inErr error) (bool, error) {
	switch {
	case r.q == nil || r.q.judged[i] == nil:
		return ok, err
	case !ok:
		if err == nil && inErr == nil {
			r.q.sight(i, in, r.since)
		}
		return ok, err
	case inErr != nil:
		return false, inErr
	}
	now := r.q.clock.Now()
	back := r.q.sight(i, in, r.since)
	if in.Durable {
		return true, nil
	}
	window := ttl
	if r.d > 0 {
		window = r.d
		if up := now.Add(-in.Up); up.After(back) {
			back = up
		}
	}
	if back.IsZero() {
		return true, nil
	}
	if left := back.Add(window).Sub(now); left > 0 {
		return false, fmt.Errorf("%w: it came back %v ago; its grants count in %v", ErrQuarantined,
			now.Sub(back).Round(time.Millisecond), left.Round(time.Millisecond))
	}
	return true, nil
}

// sight records server i's incarnation in, current at seen or later, and
// returns when its data was last born. seen, not the time of judging,
// dates the sighting ("Which restarts" in docs/design.md).
func (q *quarantine) sight(i int, in keyserver.Incarnation, seen time.Time) time.Time {
	q.mu.Lock()
	defer q.mu.Unlock()
	s := &q.seen[i]
	up := q.clock.Now().Add(-in.Up) // no earlier than it came back
	switch {
	case s.id == "": // first sight: its data is as old as it says, whenever the client was made
		s.back = up
	case in.ID != s.id && !up.Before(s.at) && up.After(s.back):
		s.back = up
	}
	// A new ID up since before the last sight is no restart (a Cluster
	// node, a promoted replica); a late, older sight does not undo a newer.
	if !seen.Before(s.at) {
		s.id, s.at = in.ID, seen
	}
	return s.back
}

// identities makes sure that no two of a client's servers reach the same
// store, which would count its votes twice ("One store counts once" in
// docs/design.md).
type identities struct {
	known []atomic.Bool // by server: identified, or it cannot tell
	err   atomic.Pointer[error]

	mu   sync.Mutex
	ids  []string        // by server; "" until it answered (or when it cannot tell)
	asks []chan struct{} // by server: closed when the ask in flight ends; nil when none is
}

// init sets id up for servers: those the quarantine judges are asked
// (see judgedIncarnator); the others cannot tell. With a single server
// there is nothing to count twice.
func (id *identities) init(servers []keyserver.KeyServer) {
	id.known = make([]atomic.Bool, len(servers))
	id.ids = make([]string, len(servers))
	id.asks = make([]chan struct{}, len(servers))
	for i, s := range servers {
		if judgedIncarnator(s) == nil || len(servers) == 1 {
			id.known[i].Store(true)
		}
	}
}

// failed returns the error every call fails with once two servers were
// found to be one store; nil until then.
func (id *identities) failed() error {
	if p := id.err.Load(); p != nil {
		return *p
	}
	return nil
}

// recordLocked records server i's identity v ("" when it cannot tell), and
// fails if another server has the same. id.mu must be held.
func (id *identities) recordLocked(servers []keyserver.KeyServer, i int, v string) error {
	if v != "" {
		for j, w := range id.ids {
			if j != i && w == v {
				err := invalidArgument("key servers %s and %s reach the same store, whose votes would count twice",
					serverName(servers, min(i, j)), serverName(servers, max(i, j)))
				id.err.Store(&err)
				return err
			}
		}
	}
	id.ids[i] = v
	id.known[i].Store(true)
	return nil
}

// serverName names server i in a message: its index, and what it says it
// is when it can (a Redis key server says its host and port, never a
// password).
func serverName(servers []keyserver.KeyServer, i int) string {
	if s, ok := servers[i].(fmt.Stringer); ok {
		return fmt.Sprintf("%d (%s)", i, s.String())
	}
	return fmt.Sprint(i)
}
