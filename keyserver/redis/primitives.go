package redis

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/goredlock/goredlock/internal/check"
	"github.com/goredlock/goredlock/internal/layout"
	"github.com/goredlock/goredlock/keyserver"
)

// The Server's semaphores, read-write locks and elections
// (keyserver.HoldKeeper): their keys and watchers are in "The primitives'
// keys" in docs/design.md.

var _ keyserver.HoldKeeper = (*Server)(nil)

// primWatch stands for the promise of a watch with no rank (an election's,
// a call whose tokens carry none): as long as a promise, and never one, as a
// promise is made of a rank's characters and '~'.
var primWatch = strings.Repeat("!", promiseLen)

// readerMark ends a reader's promise among a read-write lock's watchers, in
// place of the last '~', so that a release reaching a reader reaches all; it
// sorts between a rank's characters and '~', so the order stays the ranks'.
const readerMark = '}'

// watchPromise is what stands for the call that token belongs to among a
// primitive's watchers, and names its turns.
func watchPromise(token string, reader bool) string {
	p := keyserver.PromiseOf(token)
	if p == "" {
		return primWatch
	}
	if reader {
		p = p[:len(p)-1] + string(readerMark)
	}
	return p
}

// watchersTTL is how long a primitive's watchers outlive the last
// registration, as a lock's line: waiters register at least every LineTTL/3,
// and one that vanished is gone within LineTTL once nobody else waits.
var watchersTTL = strconv.FormatInt(keyserver.LineTTL.Milliseconds(), 10)

// The primitives' scripts (see lua.go).
var (
	permitScript        = newScript("acquire_permit.lua") // AcquireHold of a permit
	extendPermitScript  = newScript("extend_permit.lua")  // ExtendHold of a permit
	releasePermitScript = newScript("release_permit.lua") // ReleaseHold of a permit
	readScript          = newScript("acquire_read.lua")   // AcquireHold of a read hold
	writeScript         = newScript("acquire_write.lua")  // AcquireHold of a write hold
	extendHoldScript    = newScript("extend_hold.lua")    // ExtendHold of a read or write hold
	releaseHoldScript   = newScript("release_hold.lua")   // ReleaseHold of a read or write hold
	leaderScript        = newScript("acquire_leader.lua") // AcquireHold and ExtendHold of a leadership
	resignScript        = newScript("release_leader.lua") // ReleaseHold of a leadership
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

// AcquireHold takes h: a permit after checking its count against the
// stored one, a read or write hold, or a leadership with the election's
// term counter.
func (s *Server) AcquireHold(ctx context.Context, h keyserver.HoldSpec, ttl time.Duration) (bool, keyserver.HoldReply, error) {
	if err := check.HoldTTL(h, ttl); err != nil {
		return false, keyserver.HoldReply{}, err
	}
	// One function per kind: the scripts' arguments, built on the stack,
	// would otherwise all be in this frame, and a call on a new goroutine
	// (redlock's adapter of blocking calls) grow its stack twice.
	switch h.Kind {
	case keyserver.PermitHold:
		return s.acquirePermit(ctx, h, ttl)
	case keyserver.LeaderHold:
		return s.acquireLeader(ctx, h, ttl)
	}
	return s.acquireRW(ctx, h, ttl)
}

// acquireLeader takes h's leadership.
func (s *Server) acquireLeader(ctx context.Context, h keyserver.HoldSpec, ttl time.Duration) (bool, keyserver.HoldReply, error) {
	reply, err := s.evalAny(ctx, "acquire leader", leaderScript, leaderKeys(h.Key), h.Token, h.Value, ms(ttl), h.Key)
	if err != nil {
		return false, keyserver.HoldReply{}, err
	}
	n, err := ints(reply, 2)
	if err != nil {
		return false, keyserver.HoldReply{}, s.fail("acquire leader", h.Key, err)
	}
	return n[0] == 1, keyserver.HoldReply{Fence: uint64(n[1])}, nil
}

// acquireRW takes h's read or write hold.
func (s *Server) acquireRW(ctx context.Context, h keyserver.HoldSpec, ttl time.Duration) (bool, keyserver.HoldReply, error) {
	reader := h.Kind == keyserver.ReadHold
	member := s.watcher(h.Key, h.Token, reader)
	var (
		ok  bool
		hd  keyserver.HoldReply
		err error
	)
	if reader {
		ok, hd, err = s.hold(s.evalAny(ctx, "acquire read", readScript, rwKeys(h.Key), h.Token, ms(ttl), member))
	} else {
		ok, hd, err = s.hold(s.evalAny(ctx, "acquire write", writeScript, rwKeys(h.Key),
			h.Token, ms(ttl), flag(h.Kind == keyserver.WaitingWriteHold), layout.WaiterOf(h.Token), ms(keyserver.WriterWaitTTL), member, keyserver.PromiseOf(h.Token)))
	}
	s.unwatched(h.Key, member, ok)
	return ok, hd, err
}

// acquirePermit takes h's slot; refused, it lists the free slots.
func (s *Server) acquirePermit(ctx context.Context, h keyserver.HoldSpec, ttl time.Duration) (bool, keyserver.HoldReply, error) {
	var p keyserver.HoldReply
	key := h.Key
	member := s.watcher(key, h.Token, false)
	reply, err := s.evalAny(ctx, "acquire permit", permitScript, []string{key, slotKey(key, h.Slot), key + ":watchers", key + ":told"},
		strconv.Itoa(h.Permits), strconv.Itoa(h.Slot), h.Token, ms(ttl), strconv.Itoa(layout.MaxFreeHint), member,
		keyserver.PromiseOf(h.Token))
	if err != nil {
		s.unwatched(key, member, false)
		return false, p, err
	}
	n, err := ints(reply, 2)
	s.unwatched(key, member, err == nil && n[0] == 1)
	if err != nil {
		return false, p, s.fail("acquire permit", key, err)
	}
	if n[0] < 0 {
		return false, p, check.PermitsDiffer(key, h.Permits, int(n[1]))
	}
	p.Left = time.Duration(n[1]) * time.Millisecond
	for _, f := range n[2:] {
		p.Free = append(p.Free, int(f))
	}
	return n[0] == 1, p, nil
}

// ExtendHold renews h if it holds its token, or stores it again where it
// would be granted.
func (s *Server) ExtendHold(ctx context.Context, h keyserver.HoldSpec, ttl time.Duration) (bool, error) {
	if err := check.HoldTTL(h, ttl); err != nil {
		return false, err
	}
	var (
		n   int64
		err error
	)
	switch h.Kind {
	case keyserver.PermitHold:
		n, err = s.eval(ctx, "extend permit", extendPermitScript, []string{h.Key, slotKey(h.Key, h.Slot)}, strconv.Itoa(h.Slot), h.Token, ms(ttl))
	case keyserver.LeaderHold:
		var reply any
		if reply, err = s.evalAny(ctx, "extend leader", leaderScript, leaderKeys(h.Key), h.Token, h.Value, ms(ttl), h.Key); err == nil {
			var v []int64
			if v, err = ints(reply, 2); err != nil {
				return false, s.fail("extend leader", h.Key, err)
			}
			n = v[0]
		}
	default:
		n, err = s.eval(ctx, "extend hold", extendHoldScript, rwKeys(h.Key), h.Token, ms(ttl), flag(h.Kind != keyserver.ReadHold))
	}
	return n == 1, err
}

// ReleaseHold ends h if it holds its token, and tells the watchers.
func (s *Server) ReleaseHold(ctx context.Context, h keyserver.HoldSpec) (bool, error) {
	if err := check.Hold(h); err != nil {
		return false, err
	}
	var (
		n   int64
		err error
	)
	switch key := h.Key; h.Kind {
	case keyserver.PermitHold:
		member, since := s.rejoin(h)
		n, err = s.eval(ctx, "release permit", releasePermitScript, []string{slotKey(key, h.Slot), key + ":watchers", key + ":told"},
			h.Token, lineTTL, claimTTL, member, since, key)
		s.rejoined(key, member)
	case keyserver.LeaderHold:
		n, err = s.eval(ctx, "resign", resignScript, []string{key, key + ":watchers"}, h.Token, key)
	default:
		member, since := s.rejoin(h)
		n, err = s.eval(ctx, "release hold", releaseHoldScript, []string{key + ":w", key + ":r", key + ":watchers", key + ":told"},
			h.Token, flag(h.Kind != keyserver.ReadHold), lineTTL, claimTTL, member, since, key)
		s.rejoined(key, member)
	}
	return n == 1, err
}

// WatchHolds watches h's key for the release of a slot or hold, or for a
// change of leader.
func (s *Server) WatchHolds(ctx context.Context, h keyserver.HoldSpec) (<-chan struct{}, func(), error) {
	if h.Kind == keyserver.LeaderHold {
		return s.watchPrim(ctx, h.Key, primWatch, false)
	}
	if err := check.Hold(h); err != nil {
		return nil, nil, err
	}
	return s.watchPrim(ctx, h.Key, watchPromise(h.Token, h.Kind == keyserver.ReadHold), true)
}

// slotKey is the key of slot of the semaphore key.
func slotKey(key string, slot int) string { return key + ":" + strconv.Itoa(slot) }

// rwKeys are the keys of the read-write lock key.
func rwKeys(key string) []string {
	return []string{key + ":w", key + ":r", key + ":wait", key + ":watchers", key + ":told"}
}

// leaderKeys are the keys of the election key that leaderScript gets.
func leaderKeys(key string) []string {
	return []string{key, layout.FenceKey(key), key + ":watchers"}
}

// hold reads the reply of readScript or writeScript.
func (s *Server) hold(reply any, err error) (bool, keyserver.HoldReply, error) {
	if err != nil {
		return false, keyserver.HoldReply{}, err
	}
	n, err := ints(reply, 2)
	if err != nil {
		return false, keyserver.HoldReply{}, err
	}
	return n[0] == 1, keyserver.HoldReply{Left: time.Duration(n[1]) * time.Millisecond}, nil
}

func flag(b bool) string {
	if b {
		return "1"
	}
	return "0"
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

// watchPrim registers the call with key's watchers once subscribed, so that
// a release after that reaches it. Its last stop that no grant ended leaves
// (if leaves: not an election's), lest a promise to a gone call hold others up.
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
	if _, err := s.eval(ctx, "watch", registerScript, []string{key + ":watchers"}, member, watchersTTL, watchScore(promise)); err != nil {
		s.sub.stop(w)
		return nil, nil, err
	}
	return w.turn, func() {
		if s.sub.stop(w) && leaves && promise != primWatch {
			s.leaveWatch(key, member)
		}
	}, nil
}

// watchScore is the place among a primitive's watchers of the call that
// promise stands for: the time its call began (its rank's, Unix ms), so
// that every server and every process orders the calls alike, and as lock
// lines do; one millisecond's calls sort by their members, which begin
// with the rank. A watch with no rank scores the time it is set.
// (Scores are doubles in Redis: exact for ms times.)
func watchScore(promise string) string {
	if promise == primWatch {
		return strconv.FormatInt(time.Now().UnixMilli(), 10)
	}
	if ms, err := strconv.ParseUint(promise[:16], 16, 64); err == nil {
		return strconv.FormatUint(ms, 10)
	}
	return "0" // another client's rank: the same on every server and renewal, sorted by member
}

// leaveWatch runs leave_watch.lua for member of key's watchers in the
// background, bounded by a promise's time; Close waits for it.
func (s *Server) leaveWatch(key, member string) {
	ctx, cancel := context.WithTimeout(context.Background(), layout.ClaimTTL)
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

// watcher is the member a grant of token takes out of key's watchers: the
// call's if it watches key here, else "" (no command for a call that never
// waited). unwatched must follow: a stop meanwhile leaves the leaving to it.
func (s *Server) watcher(key, token string, reader bool) string {
	p := watchPromise(token, reader)
	if p == primWatch || !s.sub.watching(key, p) {
		return ""
	}
	s.sub.acquire(key, p)
	return s.sub.turnMember(p)
}

// rejoin is the member, and its score, with which h's give-back
// (h.InLine) puts its call back among h.Key's watchers, when the call
// still watches the key here; else "", "". The attempt's grant here took
// the call out of the watchers; released plainly, the hold would be
// promised to the watcher behind it, which overtook it once two servers
// did so. rejoined must follow, as unwatched follows an acquire
// (watcher): a stop meanwhile leaves the leaving to it.
func (s *Server) rejoin(h keyserver.HoldSpec) (member, since string) {
	p := watchPromise(h.Token, h.Kind == keyserver.ReadHold)
	if !h.InLine || p == primWatch || !s.sub.rejoin(h.Key, p) {
		return "", ""
	}
	return s.sub.turnMember(p), watchScore(p)
}

// rejoined records the answer of rejoin's give-back: the call leaves now
// if its last watch stopped meanwhile.
func (s *Server) rejoined(key, member string) {
	if member != "" && s.sub.rejoined(key, member[:promiseLen]) {
		s.leaveWatch(key, member)
	}
}

// unwatched records the answer of watcher's acquire: granted, the call's
// watches here end without leaving; refused or failed after its last watch
// stopped, the call leaves now (see subscriber.acquired).
func (s *Server) unwatched(key, member string, granted bool) {
	if member != "" && s.sub.acquired(key, member[:promiseLen], granted) {
		s.leaveWatch(key, member)
	}
}
