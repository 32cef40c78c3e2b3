package keyserver

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Semaphorer is a KeyServer that also keeps semaphores: at most permits
// holders of a name at once, with the fault tolerance of a lock.
//
// A semaphore is NOT a counter of holders per server. With majority
// quorums a per-server count is unsafe for permits ≥ 2: on five servers
// with two permits, three holders can each be granted by three servers
// ({1,2,3}, {3,4,5}, {1,2,4}, say) while no server counts more than two of
// them. A Semaphorer keeps permits independent slots instead, each taken
// like a lock key (one token, a TTL): a permit is one slot held on a
// quorum, and since two majorities share a server, which holds one token
// per slot, a slot has at most one holder. What the server adds to a set
// of lock keys is a hint: a refusal lists slots that are free there, so
// that the client picks a slot free on a quorum and a free permit is
// usually taken in one attempt.
//
// The permit count is stored with the semaphore. It binds while any slot
// of the semaphore is held on the server: AcquirePermit with another count
// fails with an error matching ErrPermitsDiffer (and ErrPermanent), and a
// server whose slots are all free takes the caller's count. So holders
// that share a server were all granted under the same count, and Clients
// that disagree on it never together exceed it. ExtendPermit, like Extend,
// stores a slot again on a server that lost it, without looking at the
// count.
//
// Keys: the client passes "{name}:semaphore"; a server keeps the slots and
// the count under keys of its own beside it, apart from lock keys.
type Semaphorer interface {
	KeyServer
	// AcquirePermit takes slot (0 ≤ slot < permits) of the semaphore key
	// for token with the TTL, if it is free or already token's. Refused,
	// it reports in Permits the slots free on this server, and how long
	// the soonest held slot has left; a grant need not report them (a
	// server spends nothing on a hint nobody reads).
	AcquirePermit(ctx context.Context, key string, permits, slot int, token string, ttl time.Duration) (ok bool, p Permits, err error)
	// ExtendPermit resets the TTL of slot if it holds token, or stores it
	// again if the slot is free (a restarted server). False if another
	// token holds it.
	ExtendPermit(ctx context.Context, key string, slot int, token string, ttl time.Duration) (bool, error)
	// ReleasePermit frees slot if it holds token, and reports whether it
	// did.
	ReleasePermit(ctx context.Context, key string, slot int, token string) (bool, error)
	// WatchPermits watches the semaphore key for the waiting call that
	// token belongs to: changed is closed when a release of one of its
	// slots on this server reaches the call, or when the watch broke (the
	// caller should look again either way). One freed slot serves one
	// waiter, so a server may wake only the earliest watcher at each
	// release (and keep the slot for it a moment: a Redis key server
	// does), and a call granted on the server stops being a watcher
	// there. A slot that its holder left to expire is not announced: waiters try again by the TTL a refusal
	// reported. A server may forget a watch that was not set again
	// within keyserver.LineTTL: a waiter watches anew at least every
	// LineTTL/3. stop ends the watch and must be called exactly once;
	// ctx bounds only the setting up.
	WatchPermits(ctx context.Context, key, token string) (changed <-chan struct{}, stop func(), err error)
}

// Permits is what a refused AcquirePermit tells of the semaphore on one
// server.
type Permits struct {
	// Free lists slots that no token holds on this server, lowest first,
	// at most MaxFreeHint of them.
	Free []int
	// Left is the shortest TTL left of the slots held; 0 if none.
	Left time.Duration
}

// MaxFreeHint bounds Permits.Free, so that a refusal stays small however
// many permits a semaphore has.
const MaxFreeHint = 32

// ErrPermitsDiffer is the error, wrapped and marked Permanent, of an
// AcquirePermit whose permit count differs from the one the server
// stores for the semaphore while some of its slots are held.
var ErrPermitsDiffer = errors.New("semaphore permit count differs from the stored one")

// PermitsDiffer is the error of an AcquirePermit asking for permits when
// the server holds stored: it names both counts.
func PermitsDiffer(key string, permits, stored int) error {
	return Permanent(fmt.Errorf("%w: semaphore %q asked with %d permits, stored with %d while held", ErrPermitsDiffer, key, permits, stored))
}

// CheckPermit validates the arguments of AcquirePermit: those of Acquire,
// permits ≥ 1 and a slot in [0, permits).
func CheckPermit(key string, permits, slot int, token string, ttl time.Duration) error {
	if err := CheckTTL(key, token, ttl); err != nil {
		return err
	}
	if permits < 1 || slot < 0 || slot >= permits {
		return fmt.Errorf("%w: slot %d of %d permits for semaphore %q", ErrInvalidArgument, slot, permits, key)
	}
	return nil
}

// CheckSlot validates a slot for ExtendPermit and ReleasePermit.
func CheckSlot(key string, slot int) error {
	if slot < 0 {
		return fmt.Errorf("%w: negative slot %d for semaphore %q", ErrInvalidArgument, slot, key)
	}
	return nil
}
