// Package redlock takes distributed locks with the Redlock algorithm: a
// Client asks N independent key servers for a lock at once and holds it when
// a majority grants it, so the lock survives the loss of a minority of them.
//
//	client, err := redlock.New(servers) // e.g. three Redis masters, or memory.New()
//	lock, err := client.Acquire(ctx, "nightly-report", 30*time.Second)
//	if err != nil { return err }       // errors.Is(err, redlock.ErrNotAcquired)
//	defer lock.Release(ctx)
//	// ... exclusive work, before lock.Until() ...
//
// For work of unknown length, Do holds the lock with a short TTL and extends
// it in the background while fn runs; fn's context is cancelled the moment
// the lock is lost:
//
//	err := client.Do(ctx, "migration", 30*time.Second, func(ctx context.Context) error {
//		return migrate(ctx) // stop when ctx is done
//	})
//
// # The algorithm
//
// One attempt reads the monotonic clock, draws a fresh random token and
// calls Acquire on every server concurrently, each call bounded by the
// server timeout. It stops waiting as soon as a quorum (N/2+1) has granted
// or so many have refused or failed that no quorum is possible; slow calls
// finish in the background. The lock is granted when a quorum agreed and
// validity = ttl − elapsed − (ttl·driftFactor + 2ms) is positive, and it is
// valid until start + ttl − drift. A failed attempt releases its token on
// every server, each right after that server's own answer, then waits
// delay±jitter and tries again, up to the retry count.
//
// # Long-held locks
//
// Lock.KeepAlive extends a lock every third of its TTL (WithKeepAliveInterval)
// until the lock is released, lost, or its context ends; a failed
// extension is retried every server timeout while the lock is valid. When
// no further try could be answered before Until, the lock is declared lost
// at once: Done closes and Err reports ErrLockLost before the validity
// ends, so the holder can stop in time. WithMaxExtensions and WithMaxHold
// cap how long a stuck job can keep a lock. Do runs KeepAlive for fn and
// cancels fn's context with the cause ErrLockLost when the lock is lost.
//
// # Choices this package makes
//
//   - Calls still in flight when an outcome is decided finish in the
//     background within their server timeout; a straggler's late "yes" to a
//     failed attempt is released as soon as it arrives.
//   - An extension that a quorum refuses because another token holds the key
//     marks the lock lost at once; one that fails only because servers did
//     not answer leaves it valid until its Until.
//   - Release is final: the lock is no longer used by this process even when
//     too few servers confirmed; the keys they keep expire with their TTL.
//     Do releases with a context detached from its parent's cancellation, so
//     a cancelled job still frees its lock.
//   - DoOrSkip retries as Acquire does, since contenders that split the vote
//     must not all skip, and skips only when, at the end, a quorum of servers
//     answered that another token holds the lock.
//   - A client over one server calls it on the caller's goroutine; over
//     several it calls each on its own.
//
// # Errors
//
// ErrNotAcquired: a quorum did not grant the lock in time (errors.As finds
// each server's *ServerError; errors.Is matches the context's error when it
// ended first). ErrNotHeld: the lock is not this process's to extend or
// release any more. ErrLockLost: the lock's validity ran out while it was
// held. ErrInvalidArgument: bad input, with a message naming it.
//
// # Guarantees and limits
//
// A Redlock lock is a lease. It excludes other holders while the clocks of
// this process and the servers drift apart by less than the drift factor
// allows, the servers are independent masters (not replicas of one
// another), and a crashed server stays down longer than the largest TTL
// (or persists every write with fsync always). A process pause (GC,
// swapping, a stopped VM) longer than the remaining validity can still
// overlap another holder: check Until, or Lock.Err, before each step that
// must be exclusive, and let the storage reject stale writers with fencing
// tokens where that matters. Deploy an odd number N ≥ 3 of servers; N = 1
// is plain single-node locking with no fault tolerance.
package redlock
