package redis

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/goredlock/goredlock/internal/layout"
	"github.com/goredlock/goredlock/keyserver"
)

// The Server's semaphores, read-write locks and elections
// (keyserver.Semaphorer, RWLocker and Elector). Each primitive lives under
// the key the client passes (layout.SemaphoreKey and its kin, which
// carry a Cluster hash tag) and keys made by appending to it, in its slot:
//
//   - a semaphore: key, the stored permit count, which lives at least as
//     long as every slot taken under it; key:N, slot N, a lock key
//     holding its holder's token with its TTL.
//   - a read-write lock: key:w, the writer's token with its TTL; key:r, a
//     sorted set of reader token → expiry (server time, ms), which lives
//     as long as its last reader; key:wait, the mark of the writer that
//     waited last, for keyserver.WriterWaitTTL.
//   - an election: key, a hash of t (token) and v (value) with the
//     leader's TTL; its term counter is layout.FenceKey(key), which
//     RaiseFence raises.
//   - key:watchers, a sorted set of the watching calls: each member is
//     the call's promise (layout.PromiseOf its token; a reader's ends
//     in readerMark; primWatch for an election's watchers, which have no
//     rank) and then the channel of its Server, scored by when the call
//     first watched (firstWatches), so that the watchers are in the order
//     they came. A release that frees a slot or the write hold tells the
//     earliest watcher that holds no promise (if it is a reader, every
//     watcher, and takes them out, as readers share) and promises it what
//     was freed, for keyserver.ClaimTTL, in key:told ("<member>
//     <deadline ms>," for each promise): AcquirePermit keeps a free slot
//     for each promise to another call, AcquireRead and AcquireWrite keep
//     the lock for a writer promised it. A told watcher stays a watcher:
//     a grant where it watched takes it out, and claims its promise; a
//     watcher whose promise lapsed unclaimed is taken out (it is gone, or
//     too slow to keep its place); the last stop of a call's watches on a
//     Server that no grant ended takes it out and passes on its promise
//     (leave_watch.lua). A new leader or a resignation tells every
//     watcher. The message is the member's promise and the key, which the
//     subscriber reads as a turn of the watch (key, promise), so that
//     watches share the Server's one Pub/Sub connection with the lines'
//     turns and reach their own call only.
//
// The scripts spend commands as the lock's do, since a grant's cost is
// counted in them: an uncontended permit or write hold is a SET NX and a
// look at one more key, its release a GET and a DEL (plus one command to
// find a watcher); a read hold adds the server's clock for its expiry.
// Anything more (expired readers, free slots, differing counts) is looked
// at only on the way to a refusal.

var (
	_ keyserver.Semaphorer = (*Server)(nil)
	_ keyserver.RWLocker   = (*Server)(nil)
	_ keyserver.Elector    = (*Server)(nil)
)

// primWatch stands where a turn has a promise, for the watches that have
// no rank (an election's, a call whose tokens carry none): as long as a
// promise, and never one (a promise is made of a rank's characters and
// '~').
var primWatch = strings.Repeat("!", promiseLen)

// readerMark ends a reader's promise in a read-write lock's watchers (in
// place of the last '~'), so that a release that reaches a reader reaches
// every watcher. It sorts before '~' and after a rank's characters, so
// the order stays the ranks'.
const readerMark = '}'

// watchPromise is what stands for the call that token belongs to among a
// primitive's watchers, and names its turns.
func watchPromise(token string, reader bool) string {
	p := layout.PromiseOf(token)
	if p == "" {
		return primWatch
	}
	if reader {
		p = p[:len(p)-1] + string(readerMark)
	}
	return p
}

// watchersTTL is how long a primitive's watchers outlive the last
// registration: keyserver.LineTTL, as a lock's line. A waiting call
// registers again at least every LineTTL/3 (redlock renews its watches),
// so the set lasts while anyone waits, and a call that stopped waiting
// without being woken (it gave up, its process died) is gone from it
// within LineTTL once nobody else waits.
var watchersTTL = strconv.FormatInt(keyserver.LineTTL.Milliseconds(), 10)

// The primitives' scripts (see lua.go).
var (
	permitScript        = newScript("acquire_permit.lua") // AcquirePermit
	extendPermitScript  = newScript("extend_permit.lua")  // ExtendPermit
	releasePermitScript = newScript("release_permit.lua") // ReleasePermit
	readScript          = newScript("acquire_read.lua")   // AcquireRead
	writeScript         = newScript("acquire_write.lua")  // AcquireWrite
	extendHoldScript    = newScript("extend_hold.lua")    // ExtendHold
	releaseHoldScript   = newScript("release_hold.lua")   // ReleaseHold
	leaderScript        = newScript("acquire_leader.lua") // AcquireLeader and ExtendLeader
	resignScript        = newScript("release_leader.lua") // ReleaseLeader
	readLeaderScript    = newScript("read_leader.lua")    // ReadLeader
	registerScript      = newScript("watch.lua")          // watchPrim
	leaveWatchScript    = newScript("leave_watch.lua")    // watchPrim's stop
)

// ints reads a script's reply of integers.
func ints(reply any, want int) ([]int64, error) {
	parts, ok := reply.([]any)
	if !ok || len(parts) < want {
		return nil, fmt.Errorf("unexpected reply %v to a script", reply)
	}
	n := make([]int64, len(parts))
	for i, p := range parts {
		if n[i], ok = p.(int64); !ok {
			return nil, fmt.Errorf("unexpected reply %v to a script", reply)
		}
	}
	return n, nil
}

// AcquirePermit takes slot of the semaphore key for token, after checking
// permits against the stored count; refused, it lists the free slots.
func (s *Server) AcquirePermit(ctx context.Context, key string, permits, slot int, token string, ttl time.Duration) (bool, keyserver.Permits, error) {
	var p keyserver.Permits
	if err := keyserver.CheckPermit(key, permits, slot, token, ttl); err != nil {
		return false, p, err
	}
	member := s.watcher(key, token, false)
	reply, err := s.evalAny(ctx, "acquire permit", permitScript, []string{key, slotKey(key, slot), key + ":watchers", key + ":told"},
		strconv.Itoa(permits), strconv.Itoa(slot), token, ms(ttl), strconv.Itoa(keyserver.MaxFreeHint), member,
		layout.PromiseOf(token))
	if err != nil {
		return false, p, err
	}
	n, err := ints(reply, 2)
	if err != nil {
		return false, p, s.fail("acquire permit", key, err)
	}
	s.unwatched(key, member, n[0] == 1)
	if n[0] < 0 {
		return false, p, keyserver.PermitsDiffer(key, permits, int(n[1]))
	}
	p.Left = time.Duration(n[1]) * time.Millisecond
	for _, f := range n[2:] {
		p.Free = append(p.Free, int(f))
	}
	return n[0] == 1, p, nil
}

// ExtendPermit renews slot if it holds token, or stores it again if free.
func (s *Server) ExtendPermit(ctx context.Context, key string, slot int, token string, ttl time.Duration) (bool, error) {
	if err := checkSlot(key, slot, token, ttl, true); err != nil {
		return false, err
	}
	n, err := s.eval(ctx, "extend permit", extendPermitScript, []string{key, slotKey(key, slot)}, strconv.Itoa(slot), token, ms(ttl))
	return n == 1, err
}

// ReleasePermit frees slot if it holds token, and tells the watchers.
func (s *Server) ReleasePermit(ctx context.Context, key string, slot int, token string) (bool, error) {
	if err := checkSlot(key, slot, token, 0, false); err != nil {
		return false, err
	}
	n, err := s.eval(ctx, "release permit", releasePermitScript, []string{slotKey(key, slot), key + ":watchers", key + ":told"},
		token, lineTTL, claimTTL, key)
	return n == 1, err
}

// slotKey is the key of slot of the semaphore key.
func slotKey(key string, slot int) string { return key + ":" + strconv.Itoa(slot) }

func checkSlot(key string, slot int, token string, ttl time.Duration, needTTL bool) error {
	var err error
	if needTTL {
		err = keyserver.CheckTTL(key, token, ttl)
	} else {
		err = keyserver.CheckToken(key, token)
	}
	if err != nil {
		return err
	}
	return keyserver.CheckSlot(key, slot)
}

// WatchPermits watches the semaphore key for the release of a slot.
func (s *Server) WatchPermits(ctx context.Context, key, token string) (<-chan struct{}, func(), error) {
	if err := keyserver.CheckToken(key, token); err != nil {
		return nil, nil, err
	}
	return s.watchPrim(ctx, key, watchPromise(token, false), true)
}

// rwKeys are the keys of the read-write lock key.
func rwKeys(key string) []string {
	return []string{key + ":w", key + ":r", key + ":wait", key + ":watchers", key + ":told"}
}

// AcquireRead adds token to key's readers unless a writer holds the key or
// waits for it.
func (s *Server) AcquireRead(ctx context.Context, key, token string, ttl time.Duration) (bool, keyserver.Holder, error) {
	if err := keyserver.CheckTTL(key, token, ttl); err != nil {
		return false, keyserver.Holder{}, err
	}
	member := s.watcher(key, token, true)
	ok, h, err := s.hold(s.evalAny(ctx, "acquire read", readScript, rwKeys(key), token, ms(ttl), member))
	s.unwatched(key, member, ok)
	return ok, h, err
}

// AcquireWrite stores token as key's writer if nobody holds the key; a
// refused caller that will wait marks a writer waiting.
func (s *Server) AcquireWrite(ctx context.Context, key, token string, ttl time.Duration, wait bool) (bool, keyserver.Holder, error) {
	if err := keyserver.CheckTTL(key, token, ttl); err != nil {
		return false, keyserver.Holder{}, err
	}
	member := s.watcher(key, token, false)
	ok, h, err := s.hold(s.evalAny(ctx, "acquire write", writeScript, rwKeys(key),
		token, ms(ttl), flag(wait), layout.WaiterOf(token), ms(keyserver.WriterWaitTTL), member, layout.PromiseOf(token)))
	s.unwatched(key, member, ok)
	return ok, h, err
}

// hold reads the reply of readScript or writeScript.
func (s *Server) hold(reply any, err error) (bool, keyserver.Holder, error) {
	if err != nil {
		return false, keyserver.Holder{}, err
	}
	n, err := ints(reply, 2)
	if err != nil {
		return false, keyserver.Holder{}, err
	}
	return n[0] == 1, keyserver.Holder{Left: time.Duration(n[1]) * time.Millisecond}, nil
}

func flag(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

// ExtendHold renews token's hold of key, or stores it again where it
// would be granted.
func (s *Server) ExtendHold(ctx context.Context, key, token string, ttl time.Duration, write bool) (bool, error) {
	if err := keyserver.CheckTTL(key, token, ttl); err != nil {
		return false, err
	}
	n, err := s.eval(ctx, "extend hold", extendHoldScript, rwKeys(key), token, ms(ttl), flag(write))
	return n == 1, err
}

// ReleaseHold ends token's hold of key and tells the watchers.
func (s *Server) ReleaseHold(ctx context.Context, key, token string, write bool) (bool, error) {
	if err := keyserver.CheckToken(key, token); err != nil {
		return false, err
	}
	n, err := s.eval(ctx, "release hold", releaseHoldScript, []string{key + ":w", key + ":r", key + ":watchers", key + ":told"},
		token, flag(write), lineTTL, claimTTL, key)
	return n == 1, err
}

// WatchHolds watches key for the release of a hold.
func (s *Server) WatchHolds(ctx context.Context, key, token string, write bool) (<-chan struct{}, func(), error) {
	if err := keyserver.CheckToken(key, token); err != nil {
		return nil, nil, err
	}
	return s.watchPrim(ctx, key, watchPromise(token, !write), true)
}

// AcquireLeader stores token and value as key's leader if none leads or
// token does, and reads key's term counter.
func (s *Server) AcquireLeader(ctx context.Context, key, token, value string, ttl time.Duration) (bool, uint64, error) {
	if err := checkLeader(key, token, value, ttl); err != nil {
		return false, 0, err
	}
	reply, err := s.evalAny(ctx, "acquire leader", leaderScript, []string{key, layout.FenceKey(key), key + ":watchers"},
		token, value, ms(ttl), key)
	if err != nil {
		return false, 0, err
	}
	n, err := ints(reply, 2)
	if err != nil {
		return false, 0, s.fail("acquire leader", key, err)
	}
	return n[0] == 1, uint64(n[1]), nil
}

// ExtendLeader renews key if token leads, or stores token and value again
// if none does.
func (s *Server) ExtendLeader(ctx context.Context, key, token, value string, ttl time.Duration) (bool, error) {
	if err := checkLeader(key, token, value, ttl); err != nil {
		return false, err
	}
	reply, err := s.evalAny(ctx, "extend leader", leaderScript, []string{key, layout.FenceKey(key), key + ":watchers"},
		token, value, ms(ttl), key)
	if err != nil {
		return false, err
	}
	n, err := ints(reply, 2)
	if err != nil {
		return false, s.fail("extend leader", key, err)
	}
	return n[0] == 1, nil
}

func checkLeader(key, token, value string, ttl time.Duration) error {
	if err := keyserver.CheckTTL(key, token, ttl); err != nil {
		return err
	}
	if value == "" {
		return fmt.Errorf("%w: empty value for election %q", keyserver.ErrInvalidArgument, key)
	}
	return nil
}

// ReleaseLeader frees key if token leads, and tells the watchers.
func (s *Server) ReleaseLeader(ctx context.Context, key, token string) (bool, error) {
	if err := keyserver.CheckToken(key, token); err != nil {
		return false, err
	}
	n, err := s.eval(ctx, "resign", resignScript, []string{key, key + ":watchers"}, token, key)
	return n == 1, err
}

// ReadLeader returns key's leader, with the TTL its key has left.
func (s *Server) ReadLeader(ctx context.Context, key string) (keyserver.Leadership, error) {
	var ld keyserver.Leadership
	if err := keyserver.CheckKey(key); err != nil {
		return ld, err
	}
	reply, err := s.evalAny(ctx, "read leader", readLeaderScript, []string{key})
	if err != nil {
		return ld, err
	}
	parts, _ := reply.([]any)
	if len(parts) == 0 {
		return ld, nil
	}
	if len(parts) == 3 {
		token, ok1 := text(parts[0])
		value, ok2 := text(parts[1])
		left, ok3 := parts[2].(int64)
		if ok1 && ok2 && ok3 {
			return keyserver.Leadership{Token: token, Value: value, Left: time.Duration(left) * time.Millisecond}, nil
		}
	}
	return ld, s.fail("read leader", key, fmt.Errorf("unexpected reply %v to a script", reply))
}

// text reads a bulk string reply, which transports hand over as string or
// []byte.
func text(v any) (string, bool) {
	switch t := v.(type) {
	case string:
		return t, true
	case []byte:
		return string(t), true
	}
	return "", false
}

// WatchLeader watches key for a change of its leader.
func (s *Server) WatchLeader(ctx context.Context, key string) (<-chan struct{}, func(), error) {
	return s.watchPrim(ctx, key, primWatch, false)
}

// watchPrim watches the primitive key for the call that promise stands
// for: it waits for the Server's subscription, then registers the call
// (its promise and the Server's channel) with key's watchers, so that a
// release after the registration reaches it. Its stop, ending the last
// watch of the call here that no grant ended, takes the call out of the
// watchers in the background (leave_watch.lua), passing on a promise
// made to it: told once it is gone, it would keep a slot or the lock
// from the others for a promise's time. An election's watchers (leaves
// false) have no rank and are all told at once: they need no leaving.
func (s *Server) watchPrim(ctx context.Context, key, promise string, leaves bool) (<-chan struct{}, func(), error) {
	if err := keyserver.CheckKey(key); err != nil {
		return nil, nil, err
	}
	if err := s.enter(ctx, "watch", key); err != nil {
		return nil, nil, err
	}
	defer s.inflight.Done()
	w, _, err := s.sub.watch(ctx, key, promise)
	if err != nil {
		return nil, nil, s.fail("watch", key, err)
	}
	member := s.sub.turnMember(promise)
	at := watchKey{key, promise}
	since := firstWatches.watch(at)
	if _, err := s.eval(ctx, "watch", registerScript, []string{key + ":watchers"}, member, watchersTTL, strconv.FormatInt(since, 10)); err != nil {
		firstWatches.stop(at)
		s.sub.stop(w)
		return nil, nil, err
	}
	return w.turn, func() {
		firstWatches.stop(at)
		if s.sub.stop(w) && leaves && promise != primWatch {
			s.leaveWatch(key, member)
		}
	}, nil
}

// firstWatches holds, per primitive key and promise, when the call first
// watched it through any Server of this process (Unix ms), while any of
// its watches is on: the score of its place among the key's watchers on
// every server, which its watches renewed, or set anew after an undone
// grant, keep. One time for all the servers, so that the servers put two
// calls of two processes in the same order.
var firstWatches = watchTimes{m: make(map[watchKey]*watchTime)}

type watchTimes struct {
	mu sync.Mutex
	m  map[watchKey]*watchTime
}

type watchTime struct {
	at      int64
	watches int
}

// watch counts a watch of at on, and returns the time of the first.
func (t *watchTimes) watch(at watchKey) int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	w := t.m[at]
	if w == nil {
		w = &watchTime{at: time.Now().UnixMilli()}
		t.m[at] = w
	}
	w.watches++
	return w.at
}

// stop counts a watch of at off.
func (t *watchTimes) stop(at watchKey) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if w := t.m[at]; w != nil {
		if w.watches--; w.watches <= 0 {
			delete(t.m, at)
		}
	}
}

// leaveWatch runs leave_watch.lua for member of key's watchers in the
// background, bounded by a promise's time; Close waits for it.
func (s *Server) leaveWatch(key, member string) {
	ctx, cancel := context.WithTimeout(context.Background(), keyserver.ClaimTTL)
	if s.enter(ctx, "leave watch", key) != nil {
		cancel()
		return
	}
	go func() {
		defer s.inflight.Done()
		defer cancel()
		s.eval(ctx, "leave watch", leaveWatchScript, []string{key + ":watchers", key + ":told"}, //nolint:errcheck // a watcher left behind is dead within LineTTL
			member, lineTTL, claimTTL, key)
	}()
}

// watcher is the member a grant of token on key takes out of key's
// watchers: the call's, when it watches key through this Server, else ""
// (a call that never waited costs no command for it).
func (s *Server) watcher(key, token string, reader bool) string {
	p := watchPromise(token, reader)
	if p == primWatch || !s.sub.watching(key, p) {
		return ""
	}
	return s.sub.turnMember(p)
}

// unwatched records a grant that took member (unless "") out of key's
// watchers: the call's watches here then end without leaving them.
func (s *Server) unwatched(key, member string, granted bool) {
	if granted && member != "" {
		s.sub.granted(key, member[:promiseLen])
	}
}
