// Package redlock takes distributed locks with the Redlock algorithm: a
// Client asks N independent key servers for a lock at once and holds it when
// a majority grants it, so the lock survives the loss of a minority of them.
//
//	client, err := redlock.New(servers) // three Redis masters (keyserver/redis), or memory.New()
//	if err != nil { return err }
//	defer client.Close()
//	lock, err := client.Acquire(ctx, "nightly-report", 30*time.Second)
//	if err != nil { return err }        // errors.Is(err, redlock.ErrHeldElsewhere), ErrNotAcquired
//	defer lock.Release(ctx)
//
// Production servers are Redis masters: redis.FromURL("redis://host:6379")
// in package keyserver/redis, or a go-redis or rueidis client wrapped by
// the nested modules keyserver/goredis and keyserver/rueidis. Package
// keyserver/memory serves one process before Redis exists, and
// keyserver/static scripts replies for unit tests.
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
// One attempt reads the monotonic clock, draws a fresh token and
// calls Acquire on every server concurrently, each call bounded by the
// server timeout. It stops waiting as soon as a quorum (N/2+1) has granted
// or so many have refused or failed that no quorum is possible; slow calls
// finish in the background. The lock is granted when a quorum agreed and
// validity = ttl − elapsed − (ttl·driftFactor + 2ms) is longer than the
// loss margin, and it is valid until start + ttl − drift. A failed attempt
// releases its token on every server that granted it, failed or had not
// answered (a reply lost to a timeout may hide a grant), each right after
// that server's own answer, but not where a lock was refused, which stored
// nothing; then it waits and tries again while its patience lasts (see
// Waiting for a lock).
// An attempt takes at most about one server timeout: it waits only for the
// clean-up of the servers that granted, which answer fast, and leaves the
// clean-up of servers that did not answer to the background. Failures that
// retrying cannot fix (keyserver.ErrPermanent: a key of the wrong type, a
// rejected password) end the retries once they leave too few servers for
// a quorum.
//
// # Waiting for a lock
//
// A refused Acquire (and Do) waits in line for the lock rather than
// polling, with the waiters of every process that shares the servers.
// Each server that is a keyserver.Notifier (keyserver/redis, goredis,
// rueidis, valkey, memory and static all are) keeps, per lock, a line of
// the calls waiting for it, ordered by the rank their tokens carry: the
// time the call began on its caller's clock (in milliseconds) and random
// digits that break ties. A release does not free the key while someone
// waits: the server promises it, for keyserver.ClaimTTL, to the earliest
// waiter, and tells that waiter only; while promised, the key refuses
// everyone else. The waiter tries again once a quorum of servers gave it
// its turn, so that its attempt is granted, instead of every waiter of
// every process trying at each release and splitting the vote.
//
// The order promised: waiters are granted the lock in the order their
// calls began, across every Client (process) that shares the servers, to
// the resolution of the callers' clocks. Order is advisory, exclusion is
// not: a grant still needs a quorum and validity, and a server that
// restarts empty forgets its line, which costs order, never safety. A key
// its holder left to expire (a crashed process, another library's key)
// gives no turn: the waiter tries again when the holder's TTL, which its
// refusal reported, runs out, and at least every second, which renews its
// place in the lines. A waiter that stops waiting (its context ended, its
// patience ran out) leaves the lines, and a promise made to it passes on;
// one that vanished without leaving (a crashed process) blocks the next
// waiter for a claim's time (half a second), and its place lapses with
// the line (keyserver.LineTTL). No wake-up is lost: a waiter watches for
// its turn after its refusal, and the server looks once more when the
// watch is in place.
//
// Patience is time. WithRetryCount(n) and WithRetryDelay(d) give a refused
// call n×d to get the lock after its first refusal: a call that polls
// (servers that keep no line, DoOrSkip) makes about n more attempts, d
// apart ± the jitter. A call waiting in line makes attempts only when its
// turn comes, a holder's key runs out, or its patience ends; it is given
// n×d for each waiter its refusal found ahead of it and for its own turn,
// and that much again whenever a refusal finds fewer ahead than the one
// before, so that it does not give up while the lock passes, in order,
// towards it, and does give up when the line stops moving. -1 waits until
// the context ends; 0 makes one attempt.
//
// Contenders who split the servers so that none has a quorum (calls that
// arrived at a free lock at the same moment) do not all let go and split
// the vote again: refusals compare ranks (keyserver.Compare, without a
// token leaving its server), and the earliest call keeps the servers it
// was granted while the others give theirs back at once, so it completes
// its quorum in its next attempt. TryAcquire and DoOrSkip never wait in
// line, and fenced calls (WithFencing) poll.
//
// # A lock's lifetime
//
// Release leaves nothing. On each server, a lock's calls are sent one after
// another: the delete goes out only once the lock's earlier Acquire and
// Extend calls to that server have finished, so a straggling Acquire or a
// late Extend is deleted as soon as it lands and never re-creates the key
// after Release. (A call that timed out unanswered may still run on its
// server later, if the server queued it; the delete follows it there only
// where the key server keeps one connection's order, as the pipelined
// keyserver/redis does.) Release ignores its context's cancellation (each server's
// call is still bounded by the server timeout), so defer lock.Release(ctx)
// frees the lock even when ctx has ended; it returns as soon as the
// answers tell whether a quorum deleted the key or so many servers hold
// another token that no quorum held it (ErrNotHeld: for an even N, half
// of them), and leaves the rest to the background. Client.Close waits for
// everything the client left running — stragglers, clean-ups, the rest of
// releases — and after it every call returns ErrClosed without reaching a
// server: release locks, then close the client, then the key servers.
//
// The holder hears first. A lock that was not extended is declared lost a
// loss margin before its Until (WithLossMargin, by default two server
// timeouts): Done closes and Err reports ErrLockLost then, for Acquire'd
// locks as for Do's, so that its holder can stop before another process
// can take the lock. Do cancels fn's context before it releases the lock,
// so nothing holding that context can see the lock as held once another
// process could take it; LockFromContext gives fn the lock itself.
//
// # Long-held locks
//
// Lock.KeepAlive extends a lock every third of its TTL (WithKeepAliveInterval)
// until the lock is released, lost, or its context ends; a failed
// extension is retried every server timeout, but never when its answer
// could come after the loss margin begins, and the lock is then declared
// lost at Until − margin. WithMaxExtensions and WithMaxHold cap how long a
// stuck job can keep a lock. Do runs KeepAlive for fn and cancels fn's
// context with the cause ErrLockLost when the lock is lost; it releases the
// lock when fn returns (fn's context also ends with Do's ctx, and fn should
// return then).
//
// # Scheduled jobs
//
// DoOrSkip runs fn on one of the hosts that call it at about the same time.
// It skips (ran=false, err=nil) at once, without retrying, when a quorum of
// servers answers that another token holds the lock (N/2+1 refusals, for
// an even N too; it waits for enough answers to know). A split vote or
// failing servers are retried as Acquire retries them, and an outage that
// outlasts the retries is an error, never a skip. WithMinHold keeps the
// lock for a while after a short job (the keys' TTL is cut to the rest of
// it instead of being deleted), so that a host whose schedule fires a
// little later skips instead of running the job again. The cut never
// lengthens the lock past what its TTL left it: give the call a TTL at
// least as long as the minimum hold.
//
// # Fencing tokens
//
// A lease can outlive its holder's belief in it: a holder paused past its
// validity may write after the next holder took over. With WithFencing
// every grant carries a token, Lock.Fence (and LockFromContext(ctx).Fence()
// inside Do), strictly greater than the token of every earlier grant of the
// same name, and the storage the lock protects rejects a write whose token
// is not greater than the last it accepted (UPDATE … WHERE fence < $1, or a
// compare script). Tokens start at 1, may have gaps, and Extend keeps them.
//
// How a token is drawn: each server keeps a counter per name
// (keyserver.Fencer). The acquisition reads the counters of the servers
// that answer, in the same script as the vote. Once a quorum granted, the
// client proposes the largest value read plus one and raises the counter to
// it, if lower, on every server; the token is the proposal once a quorum
// answers that it held less, and the lock is handed over only then. When a
// server already held the proposal or more, the client proposes more than
// every value it saw and tries again. The cost is one round trip per grant
// (measured on five local Redis nodes: p50 98 µs unfenced, 206 µs fenced).
//
// Why the tokens increase: an earlier grant A wrote its token to a quorum
// before A was handed over, and a later grant B is granted only once A's
// keys are gone from a server of B's quorum, so after A was handed over.
// B's write round starts after B's grant and reaches a quorum, which shares
// a server with A's quorum; that server held A's token or more before B's
// proposal reached it, and it answered that it held less, so B's token is
// greater. The counters read with the vote only make the proposal a good
// guess: they may be stale, which is why the write round checks. (The
// maximum of the counters of the servers that granted is not enough: two
// quorums may share only a server that never saw the larger value.)
//
// What the counters need: they have no TTL, and a server that restarts
// empty loses them, which waiting out the TTL (enough for lock keys) does
// not repair. Run the servers with appendfsync always, or accept this
// bound: a grant's token is written to every server that answers, and
// tokens stay increasing as long as fewer servers lost their counters since
// an earlier grant than that grant wrote to, less N/2 (with all five
// servers answering, two of five may restart empty). When more are lost, a
// later token may repeat an earlier one, and the storage rejects that
// writer's writes as stale: fencing then fails safe for the storage but
// can block the new holder until the counters pass the old value.
//
// # Semaphores, read-write locks and elections
//
// Three more primitives run on the same servers and the same quorum, each
// handing out a *Lock, so that Extend, Release, KeepAlive, Done, Err,
// Until, Fence and LockFromContext work on a permit, a read or write hold
// and a leadership as on a lock (Name is the name given):
//
//	sem := client.Semaphore("encoder", 3)         // at most 3 holders at once
//	permit, err := sem.Acquire(ctx, 30*time.Second)
//	rw := client.RWMutex("catalog")               // many readers or one writer
//	err = rw.RDo(ctx, 10*time.Second, readCatalog)
//	e := client.Election("scheduler")             // one leader, seen by all
//	leadership, err := e.Campaign(ctx, 10*time.Second, "host-a:8080")
//	leader, err := e.Leader(ctx)                  // "host-a:8080", or ErrNoLeader
//
// Each needs its servers to implement keyserver.Semaphorer, RWLocker or
// Elector (memory and static do; see the package keyserver for what each
// server keeps), and each keeps its own keys: a lock, a semaphore, a
// read-write lock and an election of one name do not exclude each other.
// A full semaphore, or a read-write lock held in the other mode, makes
// TryAcquire, TryLock and TryRLock fail at once with ErrHeldElsewhere.
// permits < 1, an empty name or an empty value is ErrInvalidArgument at
// the call, before any server is asked.
//
// Why a semaphore is not a counter. Counting holders on each server and
// granting a permit on a majority of servers whose count is under the
// permits is NOT safe for permits ≥ 2: on five servers with two permits,
// three holders can be granted by {1,2,3}, {3,4,5} and {1,2,4}, each a
// majority, while no server counts more than two of them (the test
// TestNaiveCounterAdmitsThreeSlotsRefuse plays that schedule). Counting
// cannot be fixed by a larger quorum either without giving up the
// tolerance of a minority of failures. So a semaphore of n permits is n
// independent slots, each taken like a lock key: a permit is one slot held
// on a quorum. Two majorities share a server, and a server holds one token
// per slot, so a slot has at most one holder, and at most n slots exist:
// at most n holders, with the fault tolerance of a lock. What the servers
// add is a hint: each answer lists the slots free there, so that a caller
// refused on one slot asks next for one free on a quorum, and a free
// permit is usually taken in one attempt (the first slot is drawn at
// random, which spreads callers over the free ones).
//
// The permit count is stored with the semaphore on each server while any
// of its slots is held there, and a call with another count fails with an
// error matching keyserver.ErrPermitsDiffer (a permanent failure, not
// retried). Holders that share a server were all granted under the count
// that server stores, and any two holders share a server, so holders at
// once were all granted under one count: Clients that disagree on it never
// together exceed it. A Redis key server looks at no more than 1,024 slots
// to tell whether any is still held, so that a call with another count
// costs a bounded number of commands: the count of a semaphore of more
// permits binds until it lapses, up to a TTL after the last grant or
// extension of one of its permits, even once every permit is released.
//
// Why a reader and a writer never both hold a quorum. Each server grants a
// read hold only when no writer holds the name there, and a write hold
// only when nobody holds it there. A reader's quorum and a writer's quorum
// are majorities, so they share a server, and that server refused
// whichever of the two came second (until the first's hold ended there);
// likewise for two writers. Readers share servers freely. Each reader's
// hold is its own token with its own TTL on each server, extended and
// released one by one. A writer that waits leaves a mark on the servers
// that refused it, which keeps new readers out (held ones are still
// extended) for keyserver.WriterWaitTTL (1 s) after its last attempt; it
// tries again at least every third of that, so readers who keep taking the
// lock cannot starve it, and a writer that died keeps readers out for
// about a second at most. TryLock leaves no mark.
//
// An election is a lock whose key also stores the leader's value. Campaign
// waits until this caller leads (by default without a retry limit), then
// keeps the leadership alive in the background until it is released
// (resigning), lost, or ctx ends or the client closes, which resign: ctx
// bounds the leadership, not only the wait, so a timeout around Campaign
// resigns at that timeout (WithRetryCount bounds the wait alone). A
// leadership's Fence is its term, drawn as fencing tokens are (the
// election always fences; see Fencing tokens): greater than every earlier
// leader's, so followers and stores can refuse a deposed leader. Leader
// reads every server and returns a value only when a quorum holds the same
// leader's token; ErrNoLeader when none does, another error when too few
// servers answer to tell. Observe sends the current value ("" when none
// leads) and then each change, never one twice in a row; it is woken by
// the servers' announcements (and by a leader's TTL, as an expiry is not
// announced), not by polling.
//
// Waiting. A refused Acquire, Lock, RLock or Campaign watches the servers
// (WatchPermits, WatchHolds, WatchLeader) once refused, looks again, and
// then tries when a server announces a release or change, when the
// soonest holder's TTL runs out, or after the retry delay with jitter,
// while its patience lasts: retries × retry delay from its first refusal
// (WithRetryCount). Its own clean-up does not wake it, and after a split
// vote it backs off a random moment up to a quarter of the retry delay.
// A client lets no more of its calls for one key try on the servers at
// once than could be granted together (one writer, permits calls of a
// semaphore); the others wait in the process, with the same patience
// between two of them getting through. A Redis key server wakes the
// earliest waiter by call order (rank) at a release, since a freed permit
// or write hold serves one, and every waiter when the earliest is a
// reader; an election's change wakes every observer. The waiters do not queue as a lock's do, though: a waiter
// woken by one server may find the permit taken by a newcomer, and a
// waiter that gave up is woken in vain once (those behind it then wait
// for their retry delay), so the order is a strong hint, not rule 8's
// promise; other key servers (memory) wake every waiter of the name.
//
// # Restarted servers
//
// A key server that restarts without persisting its writes comes back
// empty: the keys of locks it granted are gone, and handing such a key to
// another caller while its lock is still valid can give two callers a
// quorum each (Redlock's rule: stay down longer than the largest TTL, or
// fsync every write). The client enforces the rule for servers that are
// keyserver.Incarnators (keyserver/redis reads INFO's run id and uptime
// and CONFIG's appendonly and appendfsync when a connection is new or
// failed): a restarted server is quarantined. It is asked as any other,
// and the keys it sets are released as any other's, but its grants of
// Acquire and Extend do not count toward a quorum, and appear among a
// QuorumError's failures as ErrQuarantined, until the call's TTL has
// passed since it came back. A server that persists every write
// (appendonly yes, appendfsync always) is never quarantined; one whose
// CONFIG an ACL denies counts as not persisting.
//
// The call's TTL is the natural length: a lock lost in the restart
// threatens only callers of the same name, which as a rule use the same
// TTL, and the quarantine ends when such a lock would have expired.
// Which restarts: those that happen while the client runs, whether the
// client saw the server before (its run id changed, and its uptime is
// shorter than the time since the client last saw it; a longer one is
// another node of a Redis Cluster or a promoted replica) or first reaches
// it after it came back. Refusals record a server's incarnation as grants
// do, so a client whose first calls were refused knows the server before
// its restart. A server that restarted before the client was made counts
// at once, or every program started just after its servers would wait a
// TTL; as Redis reports uptime in whole seconds, a restart in the first
// second of the client's life, before the client first reached that
// server, passes for one of those.
// WithQuarantine(d) quarantines every server up less than d, those
// included (give it the largest TTL in use); WithQuarantine(NoQuarantine)
// counts every grant, as other Redlock clients do.
//
// What it costs: while a quorum of servers is quarantined, no lock is
// granted (and a holder cannot extend on them), for up to a TTL (plus up
// to a second: Redis reports uptime in whole seconds) after the restart,
// also of a server that stayed down longer than the TTL (the client cannot
// tell how long it was down for other clients).
// When fewer restart, the others still make the quorum and nothing
// changes. Holders that keep a lock across the restart of a majority may
// lose it, which is what keeps the next holder from overlapping them.
//
// # Options
//
// Options configure a Client in New, or one call in Acquire, TryAcquire, Do
// and DoOrSkip, where they override the client's for that call only. For
// every duration option but WithRetryJitter, 0 means the default;
// WithRetryJitter(0) means no jitter. A bad option is
// ErrInvalidArgument, reported before any server is asked. WithLogger
// applies to a client only.
//
// # Choices this package makes
//
//   - An extension that a quorum refuses because another token holds the
//     key marks the lock lost at once; one that fails only because servers
//     did not answer leaves it held until it would be declared lost anyway.
//   - Release is final: the lock is no longer used by this process even when
//     too few servers confirmed; the keys they keep expire with their TTL.
//   - A grant whose validity would not outlast the loss margin is no grant:
//     its keys are released and the attempt counts as failed.
//   - A client over one server calls it on the caller's goroutine; over
//     several it starts each call on a server that can start calls
//     (keyserver.Starter: a FromURL Redis server), whose reader hands the
//     answers over, and calls the other servers each on a goroutine of its
//     own. A started call that has not answered by the server timeout is
//     counted as failed then, as a blocking one returns; its answer, when
//     it comes, is dropped (and undone if the attempt failed).
//   - New warns, through the logger, of an even number of servers: it
//     tolerates no more failures than one server fewer.
//   - New refuses a server given twice. A server that can say which store
//     it reaches (keyserver.Identifier: one Redis under two URLs) is asked
//     with its first vote, which counts only once it answered; the call
//     that finds two servers on one store, and every call after it, fails
//     with ErrInvalidArgument. No vote waits for another server's answer,
//     so calls decided before the second name answered may be granted,
//     one vote per store.
//   - A failed server is not called by every call: after a failed dial, or
//     three failures in a row over half a second, its votes fail at once
//     until a single probe, after a jittered backoff from 100 ms doubling
//     to a second, finds it back. A call whose servers failed tries again
//     at its retry delay.
//   - A nil context panics, as in the standard library; a nil *Client's
//     Close and a nil *Lock's methods do not.
//
// # Errors
//
// Every failed fan-out is a *QuorumError (errors.As) with the votes of the
// last attempt and each server's *ServerError. ErrNotAcquired: a quorum
// did not grant the lock in time; ErrHeldElsewhere, which also matches
// ErrNotAcquired, when a quorum answered that another token holds it, as
// opposed to servers being unavailable (errors.Is also matches the
// context's error when it ended first). ErrNotHeld: the lock is not this
// process's to extend or release any more. ErrLockLost: the lock was
// declared lost before it was released. ErrClosed: the client was closed.
// ErrInvalidArgument: bad input, with a message naming it. Every error
// message starts with "redlock: ", once, also where one error of the
// package carries another, and names what failed in its own words: a
// lock, a permit of a semaphore, a read or write hold of a read-write
// lock, a leadership of an election (errors.Is matches the same errors
// for each).
//
// # Guarantees and limits
//
// A Redlock lock is a lease. It excludes other holders while the clocks of
// this process and the servers drift apart by less than the drift factor
// allows, the servers are independent masters (not replicas of one
// another), and a crashed server stays down longer than the largest TTL
// (or persists every write with fsync always; the client quarantines
// restarted servers, see Restarted servers). A process pause (GC,
// swapping, a stopped VM) longer than the remaining validity can still
// overlap another holder: check Err before each step that must be
// exclusive, and let the storage reject stale writers with fencing tokens
// where that matters. Deploy an odd number N ≥ 3 of servers; N = 1 is plain
// single-node locking with no fault tolerance.
package redlock
