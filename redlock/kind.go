package redlock

import (
	"context"
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
	// watch watches on ks for what the call of token waits for: its turn
	// in key's line, in the lines of a set's keys not promised to it
	// (promised), or a change of key.
	watch(ctx context.Context, ks keyserver.KeyServer, key, token string, promised uint64) ([]<-chan struct{}, func(), error)
	// maxWait bounds the wait of a refused call that watches for a change:
	// a waiting writer's attempts renew its mark.
	maxWait() time.Duration
	// traits are what the kind is, as constants.
	traits() traits
	// several returns the names of a hold of several (AcquireAll), with
	// their keys and fences; nil for a hold of one name, its Lock's.
	several() *nameSet
}

// traits are a kind's yes-or-no answers ("The kinds" in docs/design.md).
type traits struct {
	turns        bool // a refused call waits for its turn in lines, not for a change of its key
	oneLine      bool // it waits in its key's line, which its client's queue follows
	passes       bool // a grant may pass within its client (handover.go)
	keepsToken   bool // an attempt may keep its grants (tally.keep)
	delays       bool // its key outlives it by the lock-delay
	fencesInCall bool // a fenced call out of line reads its fence with its grant (AcquireFenced)
	startable    bool // a startcall.Starter starts its calls
}

// The kinds' traits; the kinds not named have none.
var (
	lockTraits = traits{turns: true, oneLine: true, passes: true, keepsToken: true, delays: true, fencesInCall: true, startable: true}
	setTraits  = traits{turns: true, startable: true}
)

// lockOps is the lock: one key, waited for in its line.
type lockOps struct{ primitive }

func (lockOps) name() kindName    { return lockKind }
func (lockOps) attempt() holdKind { return lockOps{} }
func (lockOps) together() int     { return 1 }
func (lockOps) traits() traits    { return lockTraits }

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
