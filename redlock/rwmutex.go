package redlock

import (
	"context"
	"math"
	"sync/atomic"
	"time"

	"github.com/goredlock/goredlock/internal/layout"
	"github.com/goredlock/goredlock/keyserver"
)

// RWMutex is a read-write lock over the servers: many readers or one
// writer, each hold on a quorum; a writer that waits keeps new readers out
// ("Read-write locks" in docs/design.md). Get one with Client.RWMutex; it
// is safe for concurrent use.
type RWMutex struct {
	c    *Client
	name string
	err  error
}

// RWMutex returns the read-write lock called name. Every server must
// implement keyserver.HoldKeeper; an empty name, or a server that does not,
// makes every method fail with ErrInvalidArgument before any server is
// asked.
func (c *Client) RWMutex(name string) *RWMutex {
	m := &RWMutex{c: c, name: name}
	if name == "" {
		m.err = invalidArgument("empty read-write lock name")
	} else {
		m.err = checkServers(c.servers, "a read-write lock", "HoldKeeper", implements[keyserver.HoldKeeper])
	}
	return m
}

// Lock takes the lock exclusively for ttl, waiting as Client.Acquire does
// while readers or another writer hold it; while it waits, new readers
// are refused. The *Lock it returns is the write hold.
func (m *RWMutex) Lock(ctx context.Context, ttl time.Duration, opts ...Option) (*Lock, error) {
	return m.take(ctx, "rw_lock", ttl, waits, true, false, nil, opts)
}

// RLock takes a shared hold for ttl, beside other readers, waiting as
// Client.Acquire does while a writer holds the lock or waits for it. Each
// read hold is a *Lock of its own, extended and released on its own.
func (m *RWMutex) RLock(ctx context.Context, ttl time.Duration, opts ...Option) (*Lock, error) {
	return m.take(ctx, "rw_rlock", ttl, waits, false, false, nil, opts)
}

// TryLock makes one attempt at Lock; it fails at once with an error
// matching ErrHeldElsewhere when readers or a writer hold the lock, and
// leaves no mark that would keep readers out.
func (m *RWMutex) TryLock(ctx context.Context, ttl time.Duration, opts ...Option) (*Lock, error) {
	return m.take(ctx, "rw_try_lock", ttl, once, true, false, nil, opts)
}

// TryRLock makes one attempt at RLock; it fails at once with an error
// matching ErrHeldElsewhere when a writer holds the lock or waits for it.
func (m *RWMutex) TryRLock(ctx context.Context, ttl time.Duration, opts ...Option) (*Lock, error) {
	return m.take(ctx, "rw_try_rlock", ttl, once, false, false, nil, opts)
}

// Do runs fn while holding the lock exclusively, as Client.Do does.
func (m *RWMutex) Do(ctx context.Context, ttl time.Duration, fn func(context.Context) error, opts ...Option) error {
	_, err := m.take(ctx, "rw_do", ttl, waits, true, true, fn, opts)
	return err
}

// RDo runs fn while holding a read hold, as Client.Do does.
func (m *RWMutex) RDo(ctx context.Context, ttl time.Duration, fn func(context.Context) error, opts ...Option) error {
	_, err := m.take(ctx, "rw_rdo", ttl, waits, false, true, fn, opts)
	return err
}

func (m *RWMutex) take(ctx context.Context, op string, ttl time.Duration, md mode, write, do bool, fn func(context.Context) error,
	opts []Option) (*Lock, error) {
	return m.c.takeHold(ctx, op, rwName(write), m.name, m.err, ttl, md, do, fn, opts, func(o *options) (string, holdKind) {
		return layout.RWKey(o.keyPrefix + m.name), &rwOps{write: write, wait: write && md == waits && o.retryCount != 0}
	})
}

func rwName(write bool) kindName {
	if write {
		return writeKind
	}
	return readKind
}

// rwOps are the calls of a read or write hold; wait marks a writer waiting
// only after a refused attempt (refused), as a first attempt's mark could
// keep readers out for nothing ("Read-write locks" in docs/design.md).
type rwOps struct {
	primitive
	write, wait bool
	refused     atomic.Bool // read by the calls of attempts still in flight
}

func (r *rwOps) name() kindName    { return rwName(r.write) }
func (r *rwOps) attempt() holdKind { return r }

func (r *rwOps) again(tally) bool {
	r.refused.Store(true)
	return false
}

// together lets one of a client's writers at a time try; readers share.
func (r *rwOps) together() int {
	if r.write {
		return 1
	}
	return 0
}

func (r *rwOps) watch(ctx context.Context, ks keyserver.KeyServer, key, token string, _ uint64) ([]<-chan struct{}, func(), error) {
	return watchHolds(ctx, ks, r.hold(key, token, false))
}

// hold is the hold of token on key: a reader's, a writer's, or a waiting
// writer's when waiting.
func (r *rwOps) hold(key, token string, waiting bool) keyserver.HoldSpec {
	k := keyserver.ReadHold
	switch {
	case r.write && waiting:
		k = keyserver.WaitingWriteHold
	case r.write:
		k = keyserver.WriteHold
	}
	return keyserver.HoldSpec{Kind: k, Key: key, Token: token}
}

// maxWait keeps a waiting writer's attempts, which renew its mark, well
// within the mark's TTL, whatever the retry delay.
func (r *rwOps) maxWait() time.Duration {
	if r.wait {
		return keyserver.WriterWaitTTL / 3
	}
	return time.Duration(math.MaxInt64)
}

func (r *rwOps) call(ctx context.Context, f fan, _ int, ks keyserver.KeyServer) (bool, uint64, keyserver.Holder, error) {
	ok, h, err := holdCall(ctx, &f, ks, r.hold(f.key, f.token, f.op == opAcquire && r.wait && r.refused.Load()))
	return ok, 0, keyserver.Holder{Left: h.Left}, err
}
