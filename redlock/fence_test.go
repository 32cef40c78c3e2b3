package redlock

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goredlock/goredlock/internal/clock"
	"github.com/goredlock/goredlock/keyserver"
	"github.com/goredlock/goredlock/keyserver/memory"
	"github.com/goredlock/goredlock/keyserver/static"
)

// notAFencer is a key server without counters.
type notAFencer struct{ keyserver.KeyServer }

func TestFencingNeedsFencers(t *testing.T) {
	a, b, c := memory.New(memory.WithSweepInterval(0)), memory.New(memory.WithSweepInterval(0)), memory.New(memory.WithSweepInterval(0))
	servers := []keyserver.KeyServer{a, notAFencer{b}, c}
	_, err := New(servers, WithFencing())
	require.ErrorIs(t, err, ErrInvalidArgument)
	assert.Contains(t, err.Error(), "server 1")

	fc := clock.NewFake(t0)
	client := testClient(t, fc, static.NewCluster(3).KeyServers())
	l, err := client.TryAcquire(bg, "job", ttl3)
	require.NoError(t, err)
	assert.Zero(t, l.Fence(), "no fencing, no token")
	require.NoError(t, l.Release(bg))
	// Fencing is the client's: WithFencing() is a ClientOption, and
	// client.TryAcquire(bg, "job", ttl3, WithFencing()) does not compile.
}

func TestFenceIsKeptByExtendAndCostsOneRoundTrip(t *testing.T) {
	fc := clock.NewFake(t0)
	servers := static.NewCluster(3)
	c := testClient(t, fc, servers.KeyServers(), WithFencing())
	l, err := c.TryAcquire(bg, "job", ttl3)
	require.NoError(t, err)
	assert.Equal(t, uint64(1), l.Fence(), "tokens start at 1")
	require.NoError(t, l.Extend(bg, ttl3))
	assert.Equal(t, uint64(1), l.Fence())
	require.NoError(t, l.Release(bg))
	require.NoError(t, c.Close())
	assert.Equal(t, 3, servers.Count(static.OpAcquire))
	assert.Equal(t, 3, servers.Count(static.OpRaiseFence), "one write round, no read round")
}

// TestFencesIncreaseWhateverMajoritiesGrant grants one name again and again
// while, on every grant, a random minority fails the acquisition and
// another random minority fails the fence write: all majorities of five
// servers, in random orders. The maximum of the counters of the servers
// that granted would go backwards here; the tokens must not.
func TestFencesIncreaseWhateverMajoritiesGrant(t *testing.T) {
	fc := clock.NewFake(t0)
	servers := static.NewCluster(5, static.WithNow(fc.Now))
	c := testClient(t, fc, servers.KeyServers(), WithFencing(), WithRetryCount(0))
	down := static.Fail(errors.New("connection refused"))
	minority := func() map[int]bool {
		out := map[int]bool{}
		for _, i := range rand.Perm(5)[:rand.IntN(3)] {
			out[i] = true
		}
		return out
	}
	var last uint64
	majorities := map[[5]bool]bool{}
	for grant := 0; grant < 2000; grant++ {
		noAcquire, noFence := minority(), minority()
		var granted [5]bool
		for i, s := range servers {
			granted[i] = !noAcquire[i]
			s.Script(static.OpAcquire, static.FromStore)
			s.Script(static.OpRaiseFence, static.FromStore)
			if noAcquire[i] {
				s.Script(static.OpAcquire, down)
			}
			if noFence[i] {
				s.Script(static.OpRaiseFence, down)
			}
		}
		l, err := c.TryAcquire(bg, "job", ttl3)
		require.NoError(t, err, "grant %d", grant)
		require.Greater(t, l.Fence(), last, "grant %d: fence went from %d to %d", grant, last, l.Fence())
		last = l.Fence()
		majorities[granted] = true
		require.NoError(t, l.Release(bg))
		c.bg.Wait()
	}
	assert.GreaterOrEqual(t, len(majorities), 16, "every majority of five granted at some point")
}

func TestFencesIncreaseAcrossClientsUnderContention(t *testing.T) {
	var servers []keyserver.KeyServer
	for i := 0; i < 5; i++ {
		s := memory.New()
		t.Cleanup(func() { s.Close() })
		servers = append(servers, s)
	}
	var (
		mu     sync.Mutex
		fences []uint64
		wg     sync.WaitGroup
		store  = &ledger{}
	)
	for w := 0; w < 8; w++ {
		c, err := New(servers, WithFencing(), WithRetryCount(-1), WithRetryDelay(time.Millisecond))
		require.NoError(t, err)
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer c.Close()
			for i := 0; i < 500/8+1; i++ {
				err := c.Do(bg, "job", time.Second, func(ctx context.Context) error {
					l, _ := LockFromContext(ctx)
					mu.Lock()
					fences = append(fences, l.Fence()) // in grant order: the lock excludes the others
					mu.Unlock()
					assert.True(t, store.write(l.Fence()), "the store rejected a holder's write")
					return nil
				})
				assert.NoError(t, err)
			}
		}()
	}
	wg.Wait()
	require.GreaterOrEqual(t, len(fences), 500)
	for i := 1; i < len(fences); i++ {
		require.Greater(t, fences[i], fences[i-1], "grant %d", i)
	}
	assert.Len(t, store.accepted, len(fences), "every holder's write was accepted, in increasing order")
}

// ledger is a store that checks fencing tokens: it accepts a write only
// with a token greater than the last one it accepted.
type ledger struct {
	mu       sync.Mutex
	fence    uint64
	accepted []uint64
}

func (s *ledger) write(fence uint64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if fence <= s.fence {
		return false
	}
	s.fence = fence
	s.accepted = append(s.accepted, fence)
	return true
}

func TestAPausedHoldersLateWriteIsRejected(t *testing.T) {
	fc := clock.NewFake(t0)
	ks := static.NewCluster(3, static.WithNow(fc.Now)).KeyServers()
	store := &ledger{}
	paused := testClient(t, fc, ks, WithFencing())
	l, err := paused.TryAcquire(bg, "ledger", ttl3)
	require.NoError(t, err)
	fc.Advance(ttl3 + time.Second) // a GC pause, a stopped VM: past the lock's validity

	next := testClient(t, fc, ks, WithFencing())
	ran, err := next.DoOrSkip(bg, "ledger", ttl3, func(ctx context.Context) error {
		l, _ := LockFromContext(ctx)
		assert.True(t, store.write(l.Fence()), "the new holder writes")
		return nil
	})
	require.NoError(t, err)
	require.True(t, ran)
	assert.False(t, store.write(l.Fence()), "the old holder wakes up and writes: rejected")
	assert.Equal(t, []uint64{2}, store.accepted)
}

// hookedFencer runs hook before each call to a memory server; the hook
// may block the call or fail it, so the wrapper is no keyserver.InProcess.
type hookedFencer struct {
	keyserver.Fencer
	hook func(op, token string) error
}

func (h hookedFencer) AcquireFenced(ctx context.Context, key, token string, ttl time.Duration) (bool, uint64, error) {
	if err := h.hook("acquire", token); err != nil {
		return false, 0, err
	}
	return h.Fencer.AcquireFenced(ctx, key, token, ttl)
}

func (h hookedFencer) RaiseFence(ctx context.Context, key string, fence uint64) (uint64, error) {
	if err := h.hook("fence", ""); err != nil {
		return 0, err
	}
	return h.Fencer.RaiseFence(ctx, key, fence)
}

func withToken(token string) Option {
	return func(o *options) { o.newToken = func(rank) string { return token } }
}

// TestAStaleReadDoesNotRepeatAToken builds the schedule where reading the
// counters along with the vote is stale: B's attempt starts while A is
// being granted and reads servers that A's token has not reached yet; A's
// token lands on {2,3,4}, A works and releases, and only then do servers
// 0 and 1 (which never saw A's token) grant B. Every counter B read says
// 0, so B proposes A's own token; the write round must see that servers
// already hold it and go higher.
func TestAStaleReadDoesNotRepeatAToken(t *testing.T) {
	fc := clock.NewFake(t0)
	gateA, gateB := make(chan struct{}), make(chan struct{})
	var aWrites, bReads sync.WaitGroup
	aWrites.Add(3)
	bReads.Add(3)
	down := errors.New("connection refused")
	var ks []keyserver.KeyServer
	for i := 0; i < 5; i++ {
		i := i
		m := memory.New(memory.WithNow(fc.Now), memory.WithSweepInterval(0))
		t.Cleanup(func() { m.Close() })
		ks = append(ks, hookedFencer{m, func(op, token string) error {
			switch {
			case op == "acquire" && token == "A" && i >= 3:
				return down // A is granted by {0,1,2}
			case op == "fence" && token == "" && i < 2:
				select {
				case <-gateA: // B's rounds, after A's
					return nil
				default:
					return down // A's token does not reach 0 and 1
				}
			case op == "fence" && token == "":
				select {
				case <-gateA:
				default:
					aWrites.Done()
					<-gateA // A's token lands on 2, 3, 4 only once B has read them
				}
			case op == "acquire" && token == "B" && i < 2:
				<-gateB // B's calls to 0 and 1 land after A released
			case op == "acquire" && token == "B":
				defer bReads.Done()
			}
			return nil
		}})
	}
	a := testClient(t, fc, ks, WithFencing(), withToken("A"))
	b := testClient(t, fc, ks, WithFencing(), withToken("B"))
	aDone := async(t, func() lockResult { l, err := a.TryAcquire(bg, "job", ttl3); return lockResult{l, err} })
	aWrites.Wait() // A holds {0,1,2} and is writing its token
	bDone := async(t, func() lockResult { l, err := b.TryAcquire(bg, "job", ttl3); return lockResult{l, err} })
	bReads.Wait() // B read 0 on 2 (refused), 3 and 4 (granted)
	close(gateA)
	ra := aDone()
	require.NoError(t, ra.err)
	require.Equal(t, uint64(1), ra.lock.Fence())
	require.NoError(t, ra.lock.Release(bg))
	close(gateB)
	rb := bDone()
	require.NoError(t, rb.err)
	assert.Greater(t, rb.lock.Fence(), ra.lock.Fence(), "B was granted after A released: its token must be greater")
	require.NoError(t, rb.lock.Release(bg))
}

// TestCheckFenceSaysWhetherAFenceIsTheNewest: true for the newest grant's
// fence, false once a later grant drew another, false for a fence never
// issued, an error without a quorum of answers.
func TestCheckFenceSaysWhetherAFenceIsTheNewest(t *testing.T) {
	fc := clock.NewFake(t0)
	servers := memoryServers(t, fc, 3)
	c := testClient(t, fc, servers, WithFencing())
	first, err := c.TryAcquire(bg, "ledger", ttl3)
	require.NoError(t, err)
	current, err := c.CheckFence(bg, "ledger", first.Fence())
	require.NoError(t, err)
	assert.True(t, current, "the holder's fence is the newest")
	require.NoError(t, first.Release(bg))
	current, err = c.CheckFence(bg, "ledger", first.Fence())
	require.NoError(t, err)
	assert.True(t, current, "released, and no grant since")

	second, err := c.TryAcquire(bg, "ledger", ttl3)
	require.NoError(t, err)
	current, err = c.CheckFence(bg, "ledger", first.Fence())
	require.NoError(t, err)
	assert.False(t, current, "a later grant drew fence %d", second.Fence())
	current, err = c.CheckFence(bg, "ledger", second.Fence())
	require.NoError(t, err)
	assert.True(t, current)
	current, err = c.CheckFence(bg, "ledger", second.Fence()+1)
	require.NoError(t, err)
	assert.False(t, current, "never issued")
	current, err = c.CheckFence(bg, "other", 1)
	require.NoError(t, err)
	assert.False(t, current, "no grant of the name at all")
	require.NoError(t, second.Release(bg))

	for _, bad := range []struct {
		name  string
		fence uint64
	}{{"", 1}, {"ledger", 0}, {string(make([]byte, MaxNameLen+1)), 1}} {
		_, err := c.CheckFence(bg, bad.name, bad.fence)
		require.ErrorIs(t, err, ErrInvalidArgument, "name of %d bytes, fence %d", len(bad.name), bad.fence)
	}
}

func TestCheckFenceNeedsAQuorumAndFencers(t *testing.T) {
	fc := clock.NewFake(t0)
	down := errors.New("connection refused")
	servers := static.NewCluster(3)
	c := testClient(t, fc, servers.KeyServers(), WithFencing())
	l, err := c.TryAcquire(bg, "ledger", ttl3)
	require.NoError(t, err)
	servers[0].Script(static.OpRaiseFence, static.Fail(down))
	current, err := c.CheckFence(bg, "ledger", l.Fence())
	require.NoError(t, err, "a quorum still answers")
	assert.True(t, current)
	servers[1].Script(static.OpRaiseFence, static.Fail(down))
	_, err = c.CheckFence(bg, "ledger", l.Fence())
	var qe *QuorumError
	require.ErrorAs(t, err, &qe)
	assert.Len(t, qe.Failed, 2)
	assert.Contains(t, err.Error(), `fence of lock "ledger" not read: `)
	assert.Contains(t, err.Error(), "2 failed")
	require.NoError(t, l.Release(bg))

	plain := testClient(t, fc, []keyserver.KeyServer{memory.New(memory.WithSweepInterval(0)), notAFencer{memory.New(memory.WithSweepInterval(0))}})
	_, err = plain.CheckFence(bg, "ledger", 1)
	require.ErrorIs(t, err, ErrInvalidArgument)
}
