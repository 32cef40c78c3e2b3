// Package redlock takes distributed locks with the Redlock algorithm: a
// Client asks N independent key servers for a lock at once and holds it
// when a majority grants it, so the lock survives the loss of a minority.
//
//	lock, err := client.Acquire(ctx, "nightly-report", 30*time.Second)
//	if err != nil {
//		return err // errors.Is(err, redlock.ErrHeldElsewhere): held elsewhere
//	}
//	defer lock.Release(ctx)
//
// Make one [Client] per set of servers with [New], share it, and close it
// when done:
//
//	client, err := redlock.New(servers) // three Redis masters (keyserver/redis), or memory.New()
//	if err != nil { return err }
//	defer client.Close()
//
// Production servers are Redis masters: redis.FromURL("redis://host:6379")
// in package keyserver/redis, or a go-redis or rueidis client wrapped by
// the nested modules keyserver/goredis and keyserver/rueidis. Package
// keyserver/memory serves one process before Redis exists, and
// keyserver/static scripts replies for unit tests.
//
// For work of unknown length, [Client.Do] holds the lock with a short TTL
// and extends it in the background while fn runs; fn's context is
// cancelled the moment the lock is lost:
//
//	err := client.Do(ctx, "migration", 30*time.Second, func(ctx context.Context) error {
//		return migrate(ctx) // stop when ctx is done
//	})
//
// Why each rule below holds, and what it costs, is written once in
// docs/design.md in the module's repository; this page says what to use.
//
// # The algorithm
//
// An attempt asks every server at once, each call bounded by the server
// timeout. It is granted when a quorum (N/2+1) agrees and the validity
// left, ttl − elapsed − (ttl·driftFactor + 2ms), is longer than the loss
// margin; [Lock.Until] is when that validity ends. See "Quorum and
// validity" in docs/design.md.
//
// # Waiting for a lock
//
// A refused [Client.Acquire] or [Client.Do] waits in the servers' line
// for the lock, fenced calls too: waiters are granted it in the order
// their calls began, across every process that shares the servers (order
// is advisory, exclusion is not). [Client.TryAcquire] makes one attempt.
// Within a process a released lock passes to a waiting call of the same
// Client without a server call, for at most [WithHandOver] after the
// servers granted it ([NoHandOver] turns it off). Patience is time:
// WithRetryCount(n) and WithRetryDelay(d) give a call n×d after its first
// refusal, and a call in line n×d for each waiter ahead of it and for its
// own turn. See "Lines and promises", "Patience" and "Hand-over inside a
// process" in docs/design.md.
//
// # A lock's lifetime
//
// A lock is a lease. It is declared lost a loss margin before its Until
// unless extended: [Lock.Done] closes and [Lock.Err] reports
// [ErrLockLost], so the holder hears first. [Lock.KeepAlive] extends it;
// [Lock.Release] is final. Release locks, then close the client, then the
// servers. [Client.DoOrSkip] runs a scheduled job on one of the hosts
// that start it; [Lock.Contended] tells a holder that another call waits;
// [WithLockDelay] keeps an expired lock from being granted again for a
// while. See "A lock's lifetime" and "Scheduled jobs" in docs/design.md.
//
// # Fencing tokens
//
// With [WithFencing] every grant carries [Lock.Fence], strictly greater
// than that of every earlier grant of the name, for the storage the lock
// protects to reject stale writers (UPDATE … WHERE fence < $1). It needs
// servers that persist every write or lose no more than the bound in
// "Fencing across a quorum" in docs/design.md.
//
// # Semaphores, read-write locks and elections
//
// Three more primitives run on the same servers and quorum, each handing
// out a *Lock (Name is the name given), so that Extend, Release,
// KeepAlive, Done, Err, Until, Fence and [LockFromContext] work on a
// permit, a read or write hold and a leadership as on a lock:
//
//	sem := client.Semaphore("encoder", 3)         // at most 3 holders at once
//	permit, err := sem.Acquire(ctx, 30*time.Second)
//	rw := client.RWMutex("catalog")               // many readers or one writer
//	err = rw.RDo(ctx, 10*time.Second, readCatalog)
//	e := client.Election("scheduler")             // one leader, seen by all
//	leadership, err := e.Campaign(ctx, 10*time.Second, "host-a:8080")
//	leader, err := e.Leader(ctx)                  // "host-a:8080", or ErrNoLeader
//
// Campaign waits until it leads, without a retry limit, also while the
// servers fail: against servers that are down it waits until its ctx ends,
// saying nothing unless the client has a logger ([WithLogger]); bound it
// with a deadline or [WithRetryCount].
//
// Each keeps its own keys: a lock, a semaphore, a read-write lock and an
// election of one name do not exclude each other. See "The semaphore
// bound", "Read-write locks" and "Elections" in docs/design.md.
//
// # Restarted servers
//
// A Redis server that restarts without fsync of every write comes back
// without its keys. The client quarantines it, whenever the client was
// made: its grants do not count until the call's TTL has passed since it
// came back ([ErrQuarantined], [WithQuarantine]), nor a new deployment's.
// See "The quarantine of restarted servers" in docs/design.md.
//
// # Options
//
// [Option] values configure a Client in New, or one call, where they
// override the client's. [ClientOption]s ([WithLogger], [WithHooks],
// [WithFencing], [WithKeyPrefix]) configure a Client only. For every
// duration option but [WithRetryJitter], 0 means the default. A bad
// option is [ErrInvalidArgument], reported before any server is asked.
//
// # Errors
//
// Every failed fan-out is a *[QuorumError] (errors.As) with the votes of
// the last attempt and each server's *[ServerError]. [ErrNotAcquired]: a
// quorum did not grant the lock in time; [ErrHeldElsewhere], which also
// matches ErrNotAcquired, when a quorum answered that another token holds
// it; errors.Is also matches the context's error when it ended first,
// and only then: a server's own timeout is in its ServerError, so that
// errors.Is(err, context.DeadlineExceeded) means the caller's deadline.
// [ErrNotHeld]: the lock is not this process's to extend or release any
// more. [ErrLockLost]: it was declared lost before it was released.
// [ErrClosed]: the client was closed. [ErrInvalidArgument]: bad input.
// Messages start with "redlock: " and name the hold: a lock, a permit, a
// read or write hold, a leadership.
//
// # Guarantees and limits
//
// A Redlock lock excludes other holders while the clocks of this process
// and the servers drift apart by less than the drift factor allows, the
// servers are independent masters (not replicas of one another), and a
// crashed server stays down longer than the largest TTL or persists every
// write (the quarantine enforces this for the servers it can ask). A
// process pause (GC, swapping, a stopped VM) longer than the remaining
// validity can still overlap another holder: check Err before each step
// that must be exclusive, and use fencing tokens where that matters.
// Deploy an odd number N ≥ 3 of servers; an even N tolerates no more
// failures than N−1, and N = 1 has no fault tolerance.
package redlock
