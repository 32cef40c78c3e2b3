package static

import (
	"context"
	"time"

	"github.com/goredlock/goredlock/keyserver"
)

var (
	_ keyserver.Semaphorer = (*Server)(nil)
	_ keyserver.RWLocker   = (*Server)(nil)
	_ keyserver.Elector    = (*Server)(nil)
)

// The operations of the primitives beside locks. Each is scripted like
// the lock's: a reply's OK and Err answer, its Delay and Block hold the
// call up, and FromStore (or no script) answers from the store. A
// scripted refusal reports an empty keyserver.Permits or Holder;
// OpAcquireLeader's reply's Fence is the counter it reads.
const (
	OpAcquirePermit Op = "acquire-permit"
	OpExtendPermit  Op = "extend-permit"
	OpReleasePermit Op = "release-permit"
	OpAcquireRead   Op = "acquire-read"
	OpAcquireWrite  Op = "acquire-write"
	OpExtendHold    Op = "extend-hold"
	OpReleaseHold   Op = "release-hold"
	OpAcquireLeader Op = "acquire-leader"
	OpExtendLeader  Op = "extend-leader"
	OpReleaseLeader Op = "release-leader"
	OpReadLeader    Op = "read-leader" // only Err, Delay and Block of its replies count
	OpWatchKey      Op = "watch-key"   // WatchPermits, WatchHolds, WatchLeader: only Err, Delay and Block count
)

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

// AcquirePermit answers from OpAcquirePermit's script, or else from the
// store.
func (s *Server) AcquirePermit(ctx context.Context, key string, permits, slot int, token string, ttl time.Duration) (bool, keyserver.Permits, error) {
	var p keyserver.Permits
	_, ok, err := s.vote(ctx, Call{Op: OpAcquirePermit, Key: key, Token: token, TTL: ttl}, func(ctx context.Context) (bool, error) {
		ok, sp, err := s.store.AcquirePermit(ctx, key, permits, slot, token, ttl)
		p = sp
		return ok, err
	})
	return ok, p, err
}

// ExtendPermit answers from OpExtendPermit's script, or else from the
// store.
func (s *Server) ExtendPermit(ctx context.Context, key string, slot int, token string, ttl time.Duration) (bool, error) {
	_, ok, err := s.vote(ctx, Call{Op: OpExtendPermit, Key: key, Token: token, TTL: ttl}, func(ctx context.Context) (bool, error) {
		return s.store.ExtendPermit(ctx, key, slot, token, ttl)
	})
	return ok, err
}

// ReleasePermit answers from OpReleasePermit's script, or else from the
// store.
func (s *Server) ReleasePermit(ctx context.Context, key string, slot int, token string) (bool, error) {
	_, ok, err := s.vote(ctx, Call{Op: OpReleasePermit, Key: key, Token: token}, func(ctx context.Context) (bool, error) {
		return s.store.ReleasePermit(ctx, key, slot, token)
	})
	return ok, err
}

// AcquireRead answers from OpAcquireRead's script, or else from the store.
func (s *Server) AcquireRead(ctx context.Context, key, token string, ttl time.Duration) (bool, keyserver.Holder, error) {
	var h keyserver.Holder
	_, ok, err := s.vote(ctx, Call{Op: OpAcquireRead, Key: key, Token: token, TTL: ttl}, func(ctx context.Context) (bool, error) {
		ok, sh, err := s.store.AcquireRead(ctx, key, token, ttl)
		h = sh
		return ok, err
	})
	return ok, h, err
}

// AcquireWrite answers from OpAcquireWrite's script, or else from the
// store (which marks a waiting writer).
func (s *Server) AcquireWrite(ctx context.Context, key, token string, ttl time.Duration, wait bool) (bool, keyserver.Holder, error) {
	var h keyserver.Holder
	_, ok, err := s.vote(ctx, Call{Op: OpAcquireWrite, Key: key, Token: token, TTL: ttl}, func(ctx context.Context) (bool, error) {
		ok, sh, err := s.store.AcquireWrite(ctx, key, token, ttl, wait)
		h = sh
		return ok, err
	})
	return ok, h, err
}

// ExtendHold answers from OpExtendHold's script, or else from the store.
func (s *Server) ExtendHold(ctx context.Context, key, token string, ttl time.Duration, write bool) (bool, error) {
	_, ok, err := s.vote(ctx, Call{Op: OpExtendHold, Key: key, Token: token, TTL: ttl}, func(ctx context.Context) (bool, error) {
		return s.store.ExtendHold(ctx, key, token, ttl, write)
	})
	return ok, err
}

// ReleaseHold answers from OpReleaseHold's script, or else from the store.
func (s *Server) ReleaseHold(ctx context.Context, key, token string, write bool) (bool, error) {
	_, ok, err := s.vote(ctx, Call{Op: OpReleaseHold, Key: key, Token: token}, func(ctx context.Context) (bool, error) {
		return s.store.ReleaseHold(ctx, key, token, write)
	})
	return ok, err
}

// AcquireLeader answers from OpAcquireLeader's script (the reply's Fence
// is the counter read), or else from the store.
func (s *Server) AcquireLeader(ctx context.Context, key, token, value string, ttl time.Duration) (bool, uint64, error) {
	var fence uint64
	r, ok, err := s.vote(ctx, Call{Op: OpAcquireLeader, Key: key, Token: token, TTL: ttl}, func(ctx context.Context) (bool, error) {
		ok, f, err := s.store.AcquireLeader(ctx, key, token, value, ttl)
		fence = f
		return ok, err
	})
	if !r.Store {
		fence = r.Fence
	}
	return ok, fence, err
}

// ExtendLeader answers from OpExtendLeader's script, or else from the
// store.
func (s *Server) ExtendLeader(ctx context.Context, key, token, value string, ttl time.Duration) (bool, error) {
	_, ok, err := s.vote(ctx, Call{Op: OpExtendLeader, Key: key, Token: token, TTL: ttl}, func(ctx context.Context) (bool, error) {
		return s.store.ExtendLeader(ctx, key, token, value, ttl)
	})
	return ok, err
}

// ReleaseLeader answers from OpReleaseLeader's script, or else from the
// store.
func (s *Server) ReleaseLeader(ctx context.Context, key, token string) (bool, error) {
	_, ok, err := s.vote(ctx, Call{Op: OpReleaseLeader, Key: key, Token: token}, func(ctx context.Context) (bool, error) {
		return s.store.ReleaseLeader(ctx, key, token)
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

// WatchPermits watches the store, unless OpWatchKey's script fails or
// holds up the call.
func (s *Server) WatchPermits(ctx context.Context, key, token string) (<-chan struct{}, func(), error) {
	return s.watchKey(ctx, key, func(ctx context.Context, key string) (<-chan struct{}, func(), error) {
		return s.store.WatchPermits(ctx, key, token)
	})
}

// WatchHolds watches the store, unless OpWatchKey's script fails or holds
// up the call.
func (s *Server) WatchHolds(ctx context.Context, key, token string, write bool) (<-chan struct{}, func(), error) {
	return s.watchKey(ctx, key, func(ctx context.Context, key string) (<-chan struct{}, func(), error) {
		return s.store.WatchHolds(ctx, key, token, write)
	})
}

// WatchLeader watches the store, unless OpWatchKey's script fails or
// holds up the call.
func (s *Server) WatchLeader(ctx context.Context, key string) (<-chan struct{}, func(), error) {
	return s.watchKey(ctx, key, s.store.WatchLeader)
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
