package keyserver

import (
	"context"
	"time"
)

// Inspector is a KeyServer that can tell what it holds under one name, in
// one read that writes nothing: the lock, its line and fence counter, and
// the semaphore, read-write lock and election of the same name. It exists
// for people, not for locking: the redlock client's Client.Inspect and the
// redlock command's status ask it, so that "who holds what, and who waits"
// has an answer without reading a store's keys by hand. A server that
// does not implement it is reported as one that cannot tell; nothing else
// of the client needs it.
//
// The keys are those the client passes to the other calls for the name
// (see NameKeys): a server reads them, and the keys of its own beside
// them, as it stores them. Inspect should read them all in one atomic step
// (a Redis server runs one script), so that the answer is one moment of
// the server, not a mix of two.
type Inspector interface {
	KeyServer
	// Inspect reads what the server holds under keys. It changes nothing
	// a holder or a waiter could notice (a server may drop what has
	// expired, as any call may).
	Inspect(ctx context.Context, keys NameKeys) (NameStatus, error)
}

// NameKeys are the keys the redlock client passes to a server's calls for
// one name, which Inspect reads together. The client fills every field.
type NameKeys struct {
	// Lock is the lock key, as Acquire gets it. Its line (Notifier) and
	// its fence counter (Fencer: "{key}:fence") are kept by the server
	// beside it, as it keeps them for those calls.
	Lock string
	// Semaphore is a PermitHold's key ("{key}:semaphore").
	Semaphore string
	// RW is a read or write hold's key ("{key}:rw").
	RW string
	// Election is a LeaderHold's key ("{key}:election"); the
	// election's term is that key's fence counter.
	Election string
}

// NameStatus is what one server holds under a name's keys (NameKeys), as
// Inspect reads it. Tokens are reported whole, since the client compares
// them across servers to find a quorum; the client never shows them whole
// to anyone (a token is its holder's secret: it releases the lock).
type NameStatus struct {
	// Lock is the lock key's holder; its Token is "" when the key is
	// free. A key promised to a waiter (see Notifier) holds the promise.
	// Left is the key's whole TTL: a lock-delay is the client's, which
	// sets the key for the lock's TTL plus the delay.
	Lock Hold
	// Waiters counts the calls in the lock key's line (Notifier); 0 for a
	// server that keeps no line.
	Waiters int
	// Fence is the lock key's fence counter (Fencer); 0 when none.
	Fence uint64
	// Permits is the semaphore's stored permit count (see HoldKeeper),
	// which binds while a slot is held; 0 when no slot is held.
	Permits int
	// Slots are the semaphore's held slots, lowest slot first, at most
	// MaxInspected of them.
	Slots []Hold
	// SlotsHeld counts the semaphore's held slots, also those past the
	// MaxInspected that Slots lists; a server that does not count them
	// leaves it 0, and len(Slots) stands for it.
	SlotsHeld int
	// PermitWaiters counts the calls that watch the semaphore
	// (WatchHolds): those waiting for a permit.
	PermitWaiters int

	// Writer is the read-write lock's writer; Token "" when none.
	Writer Hold
	// Readers are its readers, at most MaxInspected of them.
	Readers []Hold
	// ReadersHeld counts its readers, also those past the MaxInspected
	// that Readers lists; 0 from a server that does not count them, when
	// len(Readers) stands for it.
	ReadersHeld int
	// WriterWaiting reports a waiting writer's mark, which keeps new
	// readers out (see HoldKeeper).
	WriterWaiting bool
	// RWWaiters counts the calls that watch the read-write lock
	// (WatchHolds): readers and writers waiting.
	RWWaiters int

	// Leader is the election's leader: the zero Leadership when none.
	Leader Leadership
	// Term is the election's fence counter: the term of its latest
	// leader.
	Term uint64
}

// Hold is one token's hold of a key, as Inspect reads it.
type Hold struct {
	// Token is the value the caller stored, less any mark of the server's
	// own (such as a Redis server's sign of waiters in line).
	Token string
	// Left is the TTL the hold has left, at least a millisecond; negative
	// for a key stored without one (not by this module's client).
	Left time.Duration
}

// MaxInspected bounds the slots and readers one Inspect lists, so that
// its reply stays small however many permits or readers there are;
// SlotsHeld and ReadersHeld count them all.
const MaxInspected = 1024
