package static

import (
	"context"
	"time"

	"github.com/goredlock/goredlock/internal/check"
	"github.com/goredlock/goredlock/keyserver"
)

var _ keyserver.HoldKeeper = (*Server)(nil)

// The operations of the primitives beside locks, a keyserver.HoldKeeper's
// calls by the kind of hold. Each is scripted like the lock's: a reply's
// OK and Err answer, its Delay and Block hold the call up, and FromStore
// (or no script) answers from the store. A scripted refusal reports an
// empty keyserver.HoldReply; OpAcquireLeader's reply's Fence is the counter
// it reads.
const (
	OpAcquirePermit Op = "acquire-permit" // AcquireHold of a PermitHold
	OpExtendPermit  Op = "extend-permit"
	OpReleasePermit Op = "release-permit"
	OpAcquireRead   Op = "acquire-read"  // AcquireHold of a ReadHold
	OpAcquireWrite  Op = "acquire-write" // AcquireHold of a WriteHold or WaitingWriteHold
	OpExtendHold    Op = "extend-hold"   // ExtendHold of a read or write hold
	OpReleaseHold   Op = "release-hold"  // ReleaseHold of a read or write hold
	OpAcquireLeader Op = "acquire-leader"
	OpExtendLeader  Op = "extend-leader"
	OpReleaseLeader Op = "release-leader"
	OpReadLeader    Op = "read-leader" // only Err, Delay and Block of its replies count
	OpWatchKey      Op = "watch-key"   // WatchHolds, of every kind: only Err, Delay and Block count
)

// holdOps are the operations of AcquireHold, ExtendHold and ReleaseHold
// of each kind of hold.
var holdOps = map[keyserver.HoldKind][3]Op{
	keyserver.PermitHold:       {OpAcquirePermit, OpExtendPermit, OpReleasePermit},
	keyserver.ReadHold:         {OpAcquireRead, OpExtendHold, OpReleaseHold},
	keyserver.WriteHold:        {OpAcquireWrite, OpExtendHold, OpReleaseHold},
	keyserver.WaitingWriteHold: {OpAcquireWrite, OpExtendHold, OpReleaseHold},
	keyserver.LeaderHold:       {OpAcquireLeader, OpExtendLeader, OpReleaseLeader},
}

// checkPrimitive validates the calls of the primitives that Call.check
// does not know; ok is false for the others.
func (c Call) checkPrimitive() (bool, error) {
	switch c.Op {
	case OpAcquirePermit, OpExtendPermit, OpAcquireRead, OpAcquireWrite, OpExtendHold, OpAcquireLeader, OpExtendLeader:
		return true, keyserver.CheckTTL(c.Key, c.Token, c.TTL)
	case OpReadLeader, OpWatchKey, OpInspect:
		return true, keyserver.CheckKey(c.Key)
	}
	return false, nil
}

// vote makes a call that answers with a vote, from the script or from
// the store's answer.
func (s *Server) vote(ctx context.Context, c Call, store func(context.Context) (bool, error)) (Reply, bool, error) {
	return s.call(ctx, c, func(ctx context.Context, _, _ string, _ time.Duration) (bool, error) { return store(ctx) })
}

// holdCall is the logged call of h's operation (0: acquire, 1: extend, 2:
// release), refused as a real server would when h is not valid.
func (s *Server) holdCall(ctx context.Context, h keyserver.HoldSpec, op int, ttl time.Duration, store func(context.Context) (bool, error)) (Reply, bool, error) {
	invalid := check.Hold(h)
	if op != 2 {
		invalid = check.HoldTTL(h, ttl)
	}
	ops, ok := holdOps[h.Kind]
	if !ok {
		return Reply{}, false, invalid
	}
	c := Call{Op: ops[op], Key: h.Key, Token: h.Token, TTL: ttl}
	return s.callChecked(ctx, c, invalid, func(ctx context.Context, _, _ string, _ time.Duration) (bool, error) { return store(ctx) })
}

// AcquireHold answers from the script of h's kind's acquire
// (OpAcquireLeader's reply's Fence is the counter read), or else from the
// store.
func (s *Server) AcquireHold(ctx context.Context, h keyserver.HoldSpec, ttl time.Duration) (bool, keyserver.HoldReply, error) {
	var hd keyserver.HoldReply
	r, ok, err := s.holdCall(ctx, h, 0, ttl, func(ctx context.Context) (bool, error) {
		ok, sh, err := s.store.AcquireHold(ctx, h, ttl)
		hd = sh
		return ok, err
	})
	if !r.Store && h.Kind == keyserver.LeaderHold && err == nil {
		hd.Fence = r.Fence
	}
	return ok, hd, err
}

// ExtendHold answers from the script of h's kind's extend, or else from
// the store.
func (s *Server) ExtendHold(ctx context.Context, h keyserver.HoldSpec, ttl time.Duration) (bool, error) {
	_, ok, err := s.holdCall(ctx, h, 1, ttl, func(ctx context.Context) (bool, error) {
		return s.store.ExtendHold(ctx, h, ttl)
	})
	return ok, err
}

// ReleaseHold answers from the script of h's kind's release, or else from
// the store.
func (s *Server) ReleaseHold(ctx context.Context, h keyserver.HoldSpec) (bool, error) {
	_, ok, err := s.holdCall(ctx, h, 2, 0, func(ctx context.Context) (bool, error) {
		return s.store.ReleaseHold(ctx, h)
	})
	return ok, err
}

// ReadLeader answers from the store, unless OpReadLeader's script fails
// or holds up the call.
func (s *Server) ReadLeader(ctx context.Context, key string) (keyserver.Leadership, error) {
	var ld keyserver.Leadership
	_, _, err := s.vote(ctx, Call{Op: OpReadLeader, Key: key}, func(ctx context.Context) (bool, error) {
		l, err := s.store.ReadLeader(ctx, key)
		ld = l
		return err == nil, err
	})
	if err != nil {
		return keyserver.Leadership{}, err
	}
	return ld, nil
}

// WatchHolds watches the store, unless OpWatchKey's script fails or holds
// up the call.
func (s *Server) WatchHolds(ctx context.Context, h keyserver.HoldSpec) (<-chan struct{}, func(), error) {
	if _, ok := holdOps[h.Kind]; !ok || h.Kind != keyserver.LeaderHold {
		if err := check.Hold(h); err != nil {
			return nil, nil, err
		}
	}
	return s.watchKey(ctx, h.Key, func(ctx context.Context, key string) (<-chan struct{}, func(), error) {
		h.Key = key
		return s.store.WatchHolds(ctx, h)
	})
}

func (s *Server) watchKey(ctx context.Context, key string,
	store func(context.Context, string) (<-chan struct{}, func(), error)) (<-chan struct{}, func(), error) {
	var (
		ch   <-chan struct{}
		stop func()
	)
	_, _, err := s.vote(ctx, Call{Op: OpWatchKey, Key: key}, func(ctx context.Context) (bool, error) {
		c, st, err := store(ctx, key)
		ch, stop = c, st
		return err == nil, err
	})
	if err != nil {
		return nil, nil, err
	}
	if ch == nil { // a scripted answer: a watch that nothing wakes but Close of the store
		return store(ctx, key)
	}
	return ch, stop, nil
}
