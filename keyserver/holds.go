package keyserver

import (
	"context"
	"errors"
	"time"
)

// HoldKeeper is a KeyServer that also keeps the holds of the primitives
// beside locks: a semaphore's permits, a read-write lock's read and write
// holds, and an election's leadership. One interface for all of them, the
// kind of hold a value (HoldKind) rather than a method or a flag of its
// own, so that a key server implements four calls and a read.
//
// Each primitive lives under the key the client passes (HoldSpec.Key):
// "{name}:semaphore", "{name}:rw" or "{name}:election" (name keeps its own
// hash tag, if it has one, and the suffix follows it). A server keeps the
// holds under keys of its own beside it, apart from lock keys, so that a
// lock, a semaphore, a read-write lock and an election of one name do not
// exclude each other.
//
// Semaphores (PermitHold). A semaphore is NOT a counter of holders per
// server, which majority quorums make unsafe for permits ≥ 2 ("The
// semaphore bound" in docs/design.md). It is Permits independent slots,
// each taken like a lock key (one token, a TTL): a permit is one slot held
// on a quorum, and since two majorities share a server, which holds one
// token per slot, a slot has at most one holder. What the server adds is
// a hint: a refusal lists slots free there (HoldReply.Free), so that the
// client picks a slot free on a quorum. The permit count is stored with
// the semaphore and binds while any of its slots is held on the server:
// AcquireHold with another count fails with an error matching
// ErrPermitsDiffer (and ErrPermanent), and a server whose slots are all
// free takes the caller's count. So holders that share a server were all
// granted under one count, and Clients that disagree on it never together
// exceed it. ExtendHold, like Extend, stores a slot again on a server that
// lost it, without comparing the count.
//
// Read-write locks (ReadHold, WriteHold, WaitingWriteHold). On each server
// the key holds either one writer's token or a set of readers' tokens,
// each reader with its own TTL, extended and released one by one. A server
// grants a read hold when no writer holds the key and no writer waits
// there, and a write hold when nobody holds it: a reader and a writer, or
// two writers, never both hold a quorum, since two majorities share a
// server, which refuses whichever came second. A writer refused with
// WaitingWriteHold leaves a mark on the key that keeps new readers out for
// WriterWaitTTL, renewed by each of its attempts, so that a stream of
// readers cannot starve it; readers that hold go on being extended. A mark
// is the caller's rank (see Notifier), or its token when that carries
// none: the attempts of one call renew one mark, and a granted write hold
// takes its own mark away. A writer that stopped waiting keeps readers out
// no longer than WriterWaitTTL. WriteHold never leaves a mark.
//
// Elections (LeaderHold). A lock-like key that stores its holder's value
// (HoldSpec.Value) beside its token, which anyone can read (ReadLeader), and
// whose changes a server announces. The leader's term is a fencing token:
// AcquireHold reads the election's fence counter (the Fencer counter of
// HoldSpec.Key, which the client raises with RaiseFence on a quorum before it
// leads) with the vote, so that every leadership's term is greater than
// every earlier one's. The client needs every server to be a Fencer too.
type HoldKeeper interface {
	KeyServer
	// AcquireHold takes h for h.Token with the TTL if it is free, or
	// renews it if it is already the token's (a leader's value with it):
	// a PermitHold's slot, a ReadHold unless a writer holds the key or
	// waits for it, a WriteHold or WaitingWriteHold if nobody holds it, a
	// LeaderHold if nobody else leads. Refused, r.Left is how long the
	// hold in the way has left (the soonest slot or hold; for a reader,
	// the writer's hold or its waiting mark), and for a PermitHold r.Free
	// lists the slots free on this server; a grant need not report them
	// (a server spends nothing on a hint nobody reads). For a LeaderHold,
	// r.Fence is the election's fence counter, read in the same step
	// whatever the vote. A refusal stores nothing of h.Token (a
	// WaitingWriteHold's waiting mark aside, which ReleaseHold leaves), so
	// that a failed attempt need not release it where it was refused.
	AcquireHold(ctx context.Context, h HoldSpec, ttl time.Duration) (ok bool, r HoldReply, err error)
	// ExtendHold resets the TTL of h if it holds h.Token, or stores it
	// again where it is gone (a restarted server) if AcquireHold would
	// grant it, waiting marks aside. False if it cannot be.
	ExtendHold(ctx context.Context, h HoldSpec, ttl time.Duration) (bool, error)
	// ReleaseHold ends h if it holds h.Token, and reports whether it did.
	ReleaseHold(ctx context.Context, h HoldSpec) (bool, error)
	// WatchHolds watches h.Key for the waiting call that h.Token belongs
	// to: changed is closed when a release of a hold of the kind it waits
	// for reaches the call (a change of leader: a new one, a new value, a
	// resignation, for a LeaderHold, whose watch needs no token), or when
	// the watch broke; the caller looks again either way. A freed slot or
	// lock serves one waiter, so a server may wake only the earliest
	// watcher at each release (and keep what was freed for it a moment: a
	// Redis key server does), unless that is a reader: then every watcher,
	// since readers share; a change of leader wakes every watcher. A call
	// granted on the server stops being a watcher there. A hold that its
	// holder left to expire is not announced: waiters try again by the TTL
	// a refusal reported. A server may forget a watch that was not set
	// again within LineTTL: a waiter watches anew at least every
	// LineTTL/3. stop ends the watch and must be called exactly once; ctx
	// bounds only the setting up.
	WatchHolds(ctx context.Context, h HoldSpec) (changed <-chan struct{}, stop func(), err error)
	// ReadLeader returns the leader of the election key on this server:
	// the zero Leadership when nobody leads.
	ReadLeader(ctx context.Context, key string) (Leadership, error)
}

// HoldKind is what a hold of a primitive is. A value, not a flag per
// call, so that one set of HoldKeeper calls serves every primitive.
type HoldKind int8

const (
	// PermitHold is one slot of a semaphore.
	PermitHold HoldKind = iota + 1
	// ReadHold is a reader's hold of a read-write lock.
	ReadHold
	// WriteHold is a writer's hold of a read-write lock.
	WriteHold
	// WaitingWriteHold is a WriteHold whose refused AcquireHold marks a
	// writer waiting (see HoldKeeper); elsewhere it is WriteHold.
	WaitingWriteHold
	// LeaderHold is an election's leadership.
	LeaderHold
)

// HoldSpec names one hold of a primitive on one server, as a HoldKeeper's
// calls get it: which kind, of which key, by which token, and what the
// kind needs beside. (Hold is a hold as Inspect reads it.)
type HoldSpec struct {
	Kind  HoldKind // which primitive, and which of its holds
	Key   string   // the primitive's key (see HoldKeeper)
	Token string   // the holder's token; none for a LeaderHold's watch
	// Permits and Slot, for a PermitHold: the semaphore's permit count
	// and the slot held, 0 ≤ Slot < Permits.
	Permits, Slot int
	// Value, for a LeaderHold's AcquireHold and ExtendHold: the leader's
	// value, which ReadLeader reports; not empty.
	Value string
	// InLine, for ReleaseHold, marks the give-back of what an attempt of
	// a call that may wait on won here without a quorum elsewhere: a
	// server that orders a primitive's watchers and promises what a
	// release frees (a Redis key server, for permits and read-write
	// holds) puts the call back in its place first, if it still watches,
	// as Notifier.ReleaseInLine does for a lock's waiter; else the
	// watcher behind it would be promised the hold and overtake it. A
	// server that keeps no order, or tells every watcher (an election's),
	// ignores it.
	InLine bool
}

// HoldReply is what AcquireHold tells beside its vote.
type HoldReply struct {
	// Left, with a refusal, is how long the hold in the way has left on
	// this server; 0 when unknown, and for a LeaderHold.
	Left time.Duration
	// Free, with a PermitHold's refusal, lists the semaphore's slots that
	// no token holds on this server, lowest first, at most 32.
	Free []int
	// Fence, for a LeaderHold, is the election's fence counter, read with
	// the vote whatever it was.
	Fence uint64
}

// ErrPermitsDiffer is the error, wrapped and marked ErrPermanent, of a
// PermitHold's AcquireHold whose permit count differs from the one the
// server stores for the semaphore while some of its slots are held, such
// as
//
//	fmt.Errorf("%w: %w: semaphore %q asked with %d permits, stored with %d",
//		keyserver.ErrPermanent, keyserver.ErrPermitsDiffer, h.Key, h.Permits, stored)
//
// Retrying cannot help a caller whose count differs, hence ErrPermanent.
var ErrPermitsDiffer = errors.New("semaphore permit count differs from the stored one")

// WriterWaitTTL is how long a waiting writer's mark keeps new readers out
// after its last attempt: writers try again well within it, and one that
// died blocks readers no longer than this.
const WriterWaitTTL = time.Second

// Leadership is an election's leader as one server holds it.
type Leadership struct {
	Token string        // "" when nobody leads
	Value string        // the value stored beside the token (HoldSpec.Value)
	Left  time.Duration // the TTL the leader's key has left
}
