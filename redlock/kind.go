package redlock

import (
	"context"
	"math"
	"time"

	"github.com/goredlock/goredlock/keyserver"
)

// holdKind is what the kinds of hold differ by, for the one engine ("The
// kinds" in docs/design.md). The lock is lockOps, of zero size, so that
// carrying it costs a lock's acquisition and fan-outs nothing.
type holdKind interface {
	name() kindName // for errors
	// call makes f's call (an acquire, extend, release or leave_line) to
	// server i; f is a copy, as a pointer would move fan-outs to the heap.
	call(ctx context.Context, f fan, i int, ks keyserver.KeyServer) (ok bool, n uint64, h keyserver.Holder, err error)
	// attempt returns the calls of the next attempt: a permit's picks a
	// slot ("Slots" in docs/design.md); the others are their own.
	attempt() holdKind
	// attempted tells the calls attempt returned that their attempt is
	// over: a permit lets its client's other attempts ask for its slot.
	attempted()
	// again reports, after a refused attempt, whether to try again at
	// once: a semaphore's refusals named a slot free on a quorum.
	again(t tally) bool
	// together is how many of a client's calls try at once; 0: no bound.
	together() int
	// turns reports whether a refused call waits for its turn in the
	// servers' lines (a lock, a set) rather than for a change of its key.
	turns() bool
	// watch watches on ks for what the call of token waits for: its turn
	// in key's line, in the lines of a set's keys not promised to it
	// (promised), or a change of key.
	watch(ctx context.Context, ks keyserver.KeyServer, key, token string, promised uint64) ([]<-chan struct{}, func(), error)
	// maxWait bounds the wait of a refused call that watches for a change:
	// a waiting writer's attempts renew its mark.
	maxWait() time.Duration
	// oneLine reports whether the hold waits in its key's line, which its
	// client's queue follows (a lock; see "The kinds" in docs/design.md).
	oneLine() bool
	// passes reports whether a grant may pass within its client.
	passes() bool
	// keepsToken reports whether an attempt may keep its grants (tally.keep).
	keepsToken() bool
	// delays reports whether its key outlives it by the lock-delay.
	delays() bool
	// fencesInCall reports whether a fenced call out of line reads its
	// fence counter with its grant (keyserver.Fencer's AcquireFenced).
	fencesInCall() bool
	// startable reports whether a startcall.Starter starts its calls.
	startable() bool
	// several returns the names of a hold of several (AcquireAll), with
	// their keys and fences; nil for a hold of one name, its Lock's.
	several() *nameSet
}

// lockOps is the lock: one key, waited for in its line.
type lockOps struct{}

func (lockOps) name() kindName         { return lockKind }
func (lockOps) attempt() holdKind      { return lockOps{} }
func (lockOps) attempted()             {}
func (lockOps) again(tally) bool       { return false }
func (lockOps) together() int          { return 1 }
func (lockOps) turns() bool            { return true }
func (lockOps) maxWait() time.Duration { return math.MaxInt64 }
func (lockOps) oneLine() bool          { return true }
func (lockOps) passes() bool           { return true }
func (lockOps) keepsToken() bool       { return true }
func (lockOps) delays() bool           { return true }
func (lockOps) fencesInCall() bool     { return true }
func (lockOps) startable() bool        { return true }
func (lockOps) several() *nameSet      { return nil }

func (lockOps) watch(ctx context.Context, ks keyserver.KeyServer, key, token string, _ uint64) ([]<-chan struct{}, func(), error) {
	turn, stop, err := ks.(keyserver.Notifier).WatchTurn(ctx, key, token)
	return []<-chan struct{}{turn}, stop, err
}

// call makes f's call to ks for a lock key, or for the fence counter
// beside a key (opRaiseFence, opReadFence).
func (lockOps) call(ctx context.Context, f fan, _ int, ks keyserver.KeyServer) (ok bool, n uint64, h keyserver.Holder, err error) {
	switch f.op {
	case opAcquire, opAcquireInLine:
		ns, is := ks.(keyserver.Notifier)
		switch {
		case !is:
			ok, err = ks.Acquire(ctx, f.key, f.token, f.ttl)
		case f.op == opAcquireInLine:
			ok, h, err = ns.AcquireInLine(ctx, f.key, f.token, f.ttl, f.next)
		default:
			ok, h, err = ns.AcquireOrHolder(ctx, f.key, f.token, f.ttl)
		}
	case opAcquireFenced:
		ok, n, err = ks.(keyserver.Fencer).AcquireFenced(ctx, f.key, f.token, f.ttl)
	case opExtend:
		ok, err = ks.Extend(ctx, f.key, f.token, f.ttl)
	case opRelease:
		ok, err = ks.Release(ctx, f.key, f.token)
	case opGiveBack:
		if ns, is := ks.(keyserver.Notifier); is {
			ok, err = ns.ReleaseInLine(ctx, f.key, f.token)
		} else {
			ok, err = ks.Release(ctx, f.key, f.token)
		}
	case opRaiseFence:
		n, err = ks.(keyserver.Fencer).RaiseFence(ctx, f.key, f.fence)
		ok = err == nil && n < f.fence
	case opReadFence:
		n, err = ks.(keyserver.Fencer).RaiseFence(ctx, f.key, 0)
		ok = err == nil
	case opLeaveLine:
		if ns, is := ks.(keyserver.Notifier); is {
			err = ns.LeaveLine(ctx, f.key, f.token)
		}
		ok = err == nil
	}
	return ok, n, h, err
}
