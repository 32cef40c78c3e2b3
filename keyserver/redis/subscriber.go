package redis

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"sync"
	"time"

	"github.com/goredlock/goredlock/internal/layout"
)

// The subscriber is what WatchTurn runs on: one Pub/Sub connection per
// Server (see "The subscriber" in docs/design.md).

const (
	// subscribeOverdue is how long the SUBSCRIBE of a connection may go
	// unconfirmed before a WatchTurn takes the connection for dead and
	// replaces it (a black-holed link, a server paused for seconds).
	subscribeOverdue = 5 * time.Second
	// contendedFor is how long after a waiter of this process last watched
	// a key the key counts as contended (see contended).
	contendedFor = 2 * time.Second
)

// subscriber is the Pub/Sub side of a Server.
type subscriber struct {
	s       *Server
	channel string // turnChannel: where the Server's waiters hear their turns
	overdue time.Duration

	mu      sync.Mutex
	cn      *subConn      // the open connection, nil when none
	dialing chan struct{} // closed when the dial in progress ends; nil when none
	closed  bool
	watches map[watchKey]map[*turnWatch]struct{}
	watched map[string]time.Time // when a waiter last watched or stopped watching each key
	broken  []PubSub             // connections that broke, to close (see Broken)
	// joined holds, per key and promise, the connection that was
	// subscribed when the waiter's place in line was last taken, and
	// heard the turns that came since for nobody's watch (see heard).
	joined map[watchKey]*subConn
	heard  map[watchKey]heardTurn
	// acquiring counts, per primitive key and promise, the acquires in
	// flight whose grant takes the call out of the watchers (Server.watcher),
	// and the give-backs that put it back (Server.rejoin): a last watch
	// stopped meanwhile leaves the leaving to them (see answered).
	acquiring map[watchKey]*acquires
	// contention holds the holders' watches of their keys' lines, by key;
	// subscribing the SUBSCRIBEs awaiting confirmation, by channel, in the
	// order sent, which Redis confirms them in (contention.go).
	contention  map[string]*contentionSub
	subscribing map[string][]*contentionSub
}

// acquires counts a call's acquires in flight on a primitive key (see
// subscriber.acquiring).
type acquires struct {
	n     int
	leave bool // the last watch stopped, and no grant took the call out
	// rejoins counts the give-backs among them (rejoin), which put the
	// call back among the watchers: while one is in flight a grant's
	// answer cannot tell whether the call is out, for Redis may run the
	// give-back after the grant, so the last stop leaves.
	rejoins int
}

// heardTurn is a turn that came while no watch was on its key and promise.
type heardTurn struct {
	cn *subConn
	at time.Time
}

// keepFor is how long a turn heard with no watch is kept: a promise lives
// no longer.
const keepFor = layout.ClaimTTL

// watchKey is what a turn names: a key and the promise made on it.
type watchKey struct{ key, promise string }

// subConn is one subscriber connection. Its fields are guarded by the
// subscriber's mu, which is never held across I/O.
type subConn struct {
	s      *subscriber
	ps     PubSub
	sent   time.Time     // when its SUBSCRIBE was sent
	ready  chan struct{} // closed once Redis confirmed the SUBSCRIBE, or the connection died
	live   bool          // confirmed
	dead   bool
	reason error // why it died
}

// turnWatch is one WatchTurn, from its start to its stop.
type turnWatch struct {
	at      watchKey
	cn      *subConn
	turn    chan struct{}
	fired   bool // turn is closed
	stopped bool
	// left: a grant took its call out of a primitive's watchers since
	// the watch began (see granted).
	left bool
}

func newSubscriber(s *Server) *subscriber {
	var id [12]byte
	rand.Read(id[:]) //nolint:errcheck // never fails (crypto/rand)
	return &subscriber{
		s:       s,
		channel: "goredlock:turns:" + hex.EncodeToString(id[:]),
		overdue: subscribeOverdue,
		watches: make(map[watchKey]map[*turnWatch]struct{}),
		watched: make(map[string]time.Time),
		joined:  make(map[watchKey]*subConn),
		heard:   make(map[watchKey]heardTurn),
	}
}

// joining, called before waiters take or keep their places in key's line,
// returns the connection subscribed now (or nil), which their turns will
// come on (see joinedOn), and drops the turns kept for them from before.
func (s *subscriber) joining(key string, promises ...string) *subConn {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range promises {
		delete(s.heard, watchKey{key, p})
	}
	if cn := s.cn; cn != nil && cn.live && !cn.dead {
		return cn
	}
	return nil
}

// joinedOn records that these waiters took or kept their places in key's
// line while cn, from joining, was subscribed: their next WatchTurn of key
// can rely on cn rather than look at the key again.
func (s *subscriber) joinedOn(cn *subConn, key string, promises ...string) {
	if cn == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.joined) > 4096 { // waiters that never watched: forget them
		clear(s.joined)
	}
	for _, p := range promises {
		if p != "" {
			s.joined[watchKey{key, p}] = cn
		}
	}
}

// keepLocked keeps a turn that came on cn for no watch. s.mu must be held.
func (s *subscriber) keepLocked(at watchKey, cn *subConn) {
	now := time.Now()
	if len(s.heard) > 1024 {
		for k, h := range s.heard {
			if now.Sub(h.at) >= keepFor {
				delete(s.heard, k)
			}
		}
	}
	s.heard[at] = heardTurn{cn: cn, at: now}
}

// seenLocked reports whether w, on its connection, is sure to have heard
// every turn since its waiter's place in line was last taken (see
// joinedOn), and fires w if such a turn came before it. s.mu must be held.
func (s *subscriber) seenLocked(w *turnWatch) bool {
	cn, ok := s.joined[w.at]
	delete(s.joined, w.at)
	if !ok || cn != w.cn || cn.dead {
		return false
	}
	if h, ok := s.heard[w.at]; ok {
		delete(s.heard, w.at)
		if h.cn == cn && time.Since(h.at) < keepFor {
			w.fireLocked()
		}
	}
	return true
}

// contended reports whether a waiter of this process watches one of keys
// (a lock's key, or a set's), or did a moment ago: the key is then most
// likely held (or promised), and a plain SET NX would only be refused.
func (s *subscriber) contended(keys ...string) bool {
	if s == nil { // a zero Server, whose calls fail
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, key := range keys {
		if at, ok := s.watched[key]; ok && (at.IsZero() || time.Since(at) < contendedFor) {
			return true
		}
	}
	return false
}

// watch watches key for a turn promised as promise, once the subscription is
// confirmed (a connection that broke first is tried once more). seen: it has
// heard every turn since the place was taken, so no look is needed (seenLocked).
func (s *subscriber) watch(ctx context.Context, key, promise string) (w *turnWatch, seen bool, err error) {
	for retried := false; ; retried = true {
		cn, err := s.conn(ctx)
		if err != nil {
			return nil, false, err
		}
		s.mu.Lock()
		if !cn.live && !cn.dead && time.Since(cn.sent) > s.overdue {
			s.endLocked(cn, fmt.Errorf("%w: the subscription unconfirmed for %v, so the subscriber connection was closed", ErrConnectionLost, s.overdue))
			s.broken = append(s.broken, cn.ps)
		}
		if cn.dead { // it broke (a refused SUBSCRIBE, say) before a watch was on it
			s.mu.Unlock()
			if retried || ctx.Err() != nil || s.s.permanent(cn.reason) {
				return nil, false, cn.reason
			}
			continue
		}
		w = &turnWatch{at: watchKey{key, promise}, cn: cn, turn: make(chan struct{})}
		ws := s.watches[w.at]
		if ws == nil {
			ws = make(map[*turnWatch]struct{})
			s.watches[w.at] = ws
		}
		ws[w] = struct{}{}
		s.watched[key] = time.Time{} // watched now
		if a := s.acquiring[w.at]; a != nil {
			a.leave = false // watching again: this watch's stop decides
		}
		seen = cn.live && s.seenLocked(w)
		s.mu.Unlock()

		select {
		case <-cn.ready:
		case <-ctx.Done():
			s.stop(w)
			return nil, false, ctx.Err()
		}
		if cn.live { // set before ready was closed
			return w, seen, nil
		}
		s.stop(w)
		if retried || ctx.Err() != nil || s.s.permanent(cn.reason) {
			return nil, false, cn.reason
		}
	}
}

// fire closes w's turn, once.
func (s *subscriber) fire(w *turnWatch) {
	s.mu.Lock()
	defer s.mu.Unlock()
	w.fireLocked()
}

func (w *turnWatch) fireLocked() {
	if !w.fired {
		w.fired = true
		close(w.turn)
	}
}

// watching reports whether a watch of key for promise is on.
func (s *subscriber) watching(key, promise string) bool {
	if s == nil {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.watches[watchKey{key, promise}]) > 0
}

// acquire records an acquire of the call that promise stands for, on
// key, whose grant takes the call out of key's watchers; acquired must
// follow with its answer.
func (s *subscriber) acquire(key, promise string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.acquireLocked(watchKey{key, promise})
}

// acquireLocked is acquire, s.mu held.
func (s *subscriber) acquireLocked(at watchKey) {
	a := s.acquiring[at]
	if a == nil {
		if s.acquiring == nil {
			s.acquiring = make(map[watchKey]*acquires)
		}
		a = &acquires{}
		s.acquiring[at] = a
	}
	a.n++
}

// acquired records an acquire's answer: a grant took the call out of key's
// watchers, so its watches end without leaving. leave: refused or failed, the
// last acquire in flight, after the call's last watch stopped while they ran.
func (s *subscriber) acquired(key, promise string, granted bool) (leave bool) {
	return s.answered(watchKey{key, promise}, granted, false)
}

// rejoined records a give-back's answer (see rejoin), as acquired does a
// refused acquire's.
func (s *subscriber) rejoined(key, promise string) (leave bool) {
	return s.answered(watchKey{key, promise}, false, true)
}

// answered is acquired, or rejoined for a give-back.
func (s *subscriber) answered(at watchKey, granted, giveBack bool) (leave bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	a := s.acquiring[at]
	if granted && (a == nil || a.rejoins == 0) {
		for w := range s.watches[at] {
			w.left = true
		}
	}
	if a == nil {
		return false
	}
	if giveBack {
		a.rejoins--
	}
	if granted && a.rejoins == 0 {
		a.leave = false
	}
	if a.n--; a.n > 0 {
		return false
	}
	delete(s.acquiring, at)
	return a.leave && len(s.watches[at]) == 0
}

// rejoin records a give-back of the call that promise stands for, on key,
// which puts it back among key's watchers (Server.rejoin), and reports
// whether the call still watches key: then its last watch's stop leaves
// the watchers again, and rejoined must follow. One step, lest the last
// watch stop unseen before the give-back lands.
func (s *subscriber) rejoin(key, promise string) bool {
	if s == nil {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	at := watchKey{key, promise}
	if len(s.watches[at]) == 0 {
		return false
	}
	for w := range s.watches[at] {
		w.left = false
	}
	s.acquireLocked(at)
	s.acquiring[at].rejoins++
	return true
}

// stop ends w, and reports whether the call is still among a primitive's
// watchers: w was its last watch and no grant took it out since w began.
// With an acquire in flight it reports false: the answer decides (acquired).
func (s *subscriber) stop(w *turnWatch) (last bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if w.stopped {
		return false
	}
	w.stopped = true
	ws := s.watches[w.at]
	delete(ws, w)
	if len(ws) > 0 {
		return false
	}
	delete(s.watches, w.at)
	now := time.Now()
	s.watched[w.at.key] = now
	if len(s.watched) > 1024 { // forget the keys not watched for a while
		for k, at := range s.watched {
			if !at.IsZero() && now.Sub(at) >= contendedFor {
				delete(s.watched, k)
			}
		}
	}
	if w.left {
		return false
	}
	if a := s.acquiring[w.at]; a != nil {
		a.leave = true
		return false
	}
	return true
}

// conn returns the open connection, or opens one and sends its SUBSCRIBE.
// One caller dials at a time, bounded by its context; the others wait for
// it, and dial themselves if it failed and their context allows.
func (s *subscriber) conn(ctx context.Context) (*subConn, error) {
	for {
		s.mu.Lock()
		switch {
		case s.closed:
			s.mu.Unlock()
			return nil, ErrClosed
		case s.cn != nil:
			cn := s.cn
			s.mu.Unlock()
			return cn, nil
		case s.dialing != nil:
			dialing := s.dialing
			s.mu.Unlock()
			select {
			case <-dialing:
				continue
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		dialing := make(chan struct{})
		s.dialing = dialing
		broken := s.broken
		s.broken = nil
		s.mu.Unlock()
		closeAll(broken)
		cn, err := s.open(ctx)
		s.mu.Lock()
		s.dialing = nil
		close(dialing)
		s.mu.Unlock()
		if err != nil {
			return nil, err
		}
		return cn, nil
	}
}

// open opens a connection and subscribes it to the Server's channel.
// s.dialing must be this caller's.
func (s *subscriber) open(ctx context.Context) (*subConn, error) {
	cn := &subConn{s: s, ready: make(chan struct{}), sent: time.Now()}
	ps, err := s.s.t.PubSub(ctx, cn)
	if err != nil {
		return nil, fmt.Errorf("connecting: %w", err)
	}
	s.mu.Lock()
	cn.ps = ps
	if s.closed || cn.dead {
		s.mu.Unlock()
		ps.Close() //nolint:errcheck // never used
		if cn.dead {
			return cn, nil // the caller sees it dead and tries again
		}
		return nil, ErrClosed
	}
	s.cn = cn
	s.mu.Unlock()
	// Bounded by the caller's context too: some clients wait for the
	// confirmation here. A SUBSCRIBE cut short breaks the connection.
	if err := ps.Subscribe(ctx, s.channel); err != nil {
		cn.Broken(err)
	}
	return cn, nil
}

// close closes the open connection, waking every waiter, and makes later
// watches fail with ErrClosed.
func (s *subscriber) close() {
	s.mu.Lock()
	s.closed = true
	cn := s.cn
	if cn != nil {
		s.endLocked(cn, ErrClosed)
	}
	broken := s.broken
	s.broken = nil
	s.mu.Unlock()
	if cn != nil {
		broken = append(broken, cn.ps)
	}
	closeAll(broken)
}

// closeAll closes connections that are of no more use.
func closeAll(conns []PubSub) {
	for _, ps := range conns {
		ps.Close() //nolint:errcheck // of no more use
	}
}

// turnMember is what stands for a waiter in a key's line: its promise,
// which sorts by rank, then the channel its Server hears turns on.
func (s *subscriber) turnMember(promise string) string {
	if s == nil { // a zero Server, whose calls fail
		return promise
	}
	return promise + s.channel
}

// promiseLen is the length of a promise, where a line member's channel
// begins and a turn's key does.
const promiseLen = layout.TokenLen
