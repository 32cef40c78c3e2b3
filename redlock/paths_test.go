package redlock

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goredlock/goredlock/internal/clock"
	"github.com/goredlock/goredlock/keyserver/static"
)

// holdPath is one kind of hold, taken through its own code path: a lock,
// a semaphore's permit, a read-write lock's read or write hold, an
// election's leadership.
type holdPath struct {
	name             string
	acquire, release static.Op // the key server calls that take and give back the hold
	take             func(ctx context.Context, c *Client, opts ...Option) (*Lock, error)
}

var holdPaths = []holdPath{
	{"lock", static.OpAcquire, static.OpRelease, func(ctx context.Context, c *Client, opts ...Option) (*Lock, error) {
		return c.Acquire(ctx, "job", ttl3, opts...)
	}},
	{"permit", static.OpAcquirePermit, static.OpReleasePermit, func(ctx context.Context, c *Client, opts ...Option) (*Lock, error) {
		return c.Semaphore("pool", 2).Acquire(ctx, ttl3, opts...)
	}},
	{"read hold", static.OpAcquireRead, static.OpReleaseHold, func(ctx context.Context, c *Client, opts ...Option) (*Lock, error) {
		return c.RWMutex("catalog").RLock(ctx, ttl3, opts...)
	}},
	{"write hold", static.OpAcquireWrite, static.OpReleaseHold, func(ctx context.Context, c *Client, opts ...Option) (*Lock, error) {
		return c.RWMutex("catalog").Lock(ctx, ttl3, opts...)
	}},
	{"leadership", static.OpAcquireLeader, static.OpReleaseLeader, func(ctx context.Context, c *Client, opts ...Option) (*Lock, error) {
		return c.Election("primary").Campaign(ctx, ttl3, "me", opts...)
	}},
}

// TestEvenReleaseRefusedByHalfIsNotHeldOnEveryPath: on four servers, a
// release that two refuse (another token holds the key there) while the
// other two hang or fail cannot be confirmed by a quorum of three, and
// no quorum can have held the hold: Release's error matches ErrNotHeld
// (the redsync case), for every kind of hold.
func TestEvenReleaseRefusedByHalfIsNotHeldOnEveryPath(t *testing.T) {
	for _, p := range holdPaths {
		for _, silent := range []static.Reply{static.Hang, static.Fail(errors.New("connection reset"))} {
			what := "hang"
			if !silent.Block {
				what = "fail"
			}
			t.Run(p.name+", two "+what, func(t *testing.T) {
				fc := clock.NewFake(t0)
				servers := static.NewCluster(4, static.WithNow(fc.Now))
				c := testClient(t, fc, servers.KeyServers())
				l, err := p.take(bg, c)
				require.NoError(t, err)
				servers[0].Script(p.release, static.Deny)
				servers[1].Script(p.release, static.Deny)
				servers[2].Script(p.release, silent)
				servers[3].Script(p.release, silent)
				err = l.Release(bg)
				require.ErrorIs(t, err, ErrNotHeld)
				var qe *QuorumError
				require.ErrorAs(t, err, &qe)
				assert.Equal(t, 2, qe.Refused)
				assert.Zero(t, qe.Granted)
				advanceTimersUntil(t, fc, 1, doneWaiting(c))
			})
		}
	}
}

// TestNoJitterWaitsTheRetryDelayOnEveryPath: with WithRetryJitter(0),
// given to the client or to the call, every wait between two attempts is
// the retry delay exactly, for every kind of hold, when the servers fail
// and when they refuse (servers that keep no line, for a lock: a lock's
// wait in a line is paced by turns, not by the retry delay).
func TestNoJitterWaitsTheRetryDelayOnEveryPath(t *testing.T) {
	const delay, waits = 120 * time.Millisecond, 8
	noJitter := []Option{WithRetryDelay(delay), WithRetryJitter(0), WithRetryCount(-1)}
	for _, p := range holdPaths {
		for _, why := range []string{"fail", "refuse"} {
			for _, where := range []string{"client", "call"} {
				t.Run(p.name+", servers "+why+", options of the "+where, func(t *testing.T) {
					fc := clock.NewFake(t0)
					reply := static.Deny
					if why == "fail" {
						reply = static.Fail(errors.New("connection refused"))
					}
					servers := static.NewCluster(3, static.WithNow(fc.Now))
					ks := servers.KeyServers()
					for i, s := range servers {
						s.Script(p.acquire, reply)
						if p.name == "lock" && why == "refuse" {
							ks[i] = hidden{s}
						}
					}
					var (
						clientOpts []ClientOption
						callOpts   []Option
					)
					if where == "client" {
						for _, o := range noJitter {
							clientOpts = append(clientOpts, o)
						}
					} else {
						callOpts = noJitter
					}
					c := testClient(t, fc, ks, clientOpts...)
					ctx, cancel := context.WithCancel(bg)
					res := async(t, func() error { _, err := p.take(ctx, c, callOpts...); return err })
					got := sleeps(t, fc, waits)
					cancel()
					require.ErrorIs(t, res(), context.Canceled)
					for i, d := range got {
						assert.Equal(t, delay, d, "wait %d of %v", i+1, got)
					}
					c.bg.Wait()
				})
			}
		}
	}
}

// TestReleaseCountsUntilItKnows: a release's count ends when a quorum
// deleted, when more than n − quorum refused (not held: for four servers
// two refusals do), or when neither can happen any more; a failure beside
// a single refusal does not end it while a second refusal could still
// come.
func TestReleaseCountsUntilItKnows(t *testing.T) {
	for _, tc := range []struct {
		n, granted, refused, failed int
		decided                     bool
	}{
		{4, 3, 0, 0, true},  // confirmed
		{4, 0, 2, 0, true},  // not held
		{4, 0, 1, 1, false}, // a second refusal would make it not held
		{4, 1, 1, 1, false}, // the last may refuse too
		{4, 1, 1, 2, true},  // neither a quorum of deletes nor two refusals
		{4, 0, 1, 3, true},
		{3, 0, 1, 1, false}, // the third decides between not held and unconfirmed
		{3, 0, 2, 0, true},
		{3, 1, 0, 1, false},
		{3, 1, 1, 1, true},
		{5, 0, 2, 2, false},
		{5, 0, 3, 0, true},
		{5, 1, 2, 1, false},
		{5, 1, 2, 2, true},
	} {
		v := tally{n: tc.n, granted: tc.granted, refused: tc.refused, errs: make([]*ServerError, tc.failed)}
		assert.Equal(t, tc.decided, v.decided(untilKnownReleased), "%d servers: %d deleted, %d refused, %d failed",
			tc.n, tc.granted, tc.refused, tc.failed)
	}
}
