// Package chaos is goredlock's fault-injection suite: independent clients
// take locks on real Redis nodes, each through its own proxies that delay,
// black-hole and reset its traffic, while the nodes are paused, killed and
// restarted and their clocks run at different rates, and while clients
// that are processes of their own are stopped; then a checker reads
// everything the clients saw, on one monotonic clock, for broken promises.
// It is the evidence behind the README's "Guarantees and limits", and
// anyone can rerun it:
//
//	make chaos                 # every scenario at full length, about seven minutes
//	make chaos SHORT=1         # the short run, which make test runs on every change
//	make chaos LONG=1          # every scenario for longer: over 100,000 grants in the safe ones
//	make chaos SEED=42         # replay a run's fault schedule and workload draws
//
// Its pieces also work on their own:
//
//	p, err := chaos.Listen(node.Addr()) // clients dial p.Addr() instead
//	p.BlackHole()                       // bytes are held from now on ...
//	p.Heal()                            // ... and delivered late, as after a partition
//	report := chaos.Check(history.Grants())
//	ks = chaos.Skewed(ks, clocks, i)    // node i keeps time at clocks.Rate(i)
//
// # What is checked
//
// Each grant is recorded with the time it was returned to its holder, its
// Until, when Release was called, when the holder heard of a loss, and the
// loss margin in force. Check reports two holders of one name whose holds
// [granted, min(released, Until)] intersect, a loss heard after Until −
// margin, a grant returned after its Until, and fencing tokens that do not
// rise in grant order (every other client takes fenced locks). A loss
// heard late but before Until while the test's own process was stalled
// as long (probes time their own wake-ups) is the machine's lateness: it is
// counted apart, not as a violation. Each
// Acquire and Do client runs two goroutines over its one redlock.Client,
// so that a lock released while the other waits for it is passed inside
// the client (hand-over), with the holder's token: the same checks hold
// the passes to the same promises, and the report counts them. Fence
// counters have no TTL, so a node restarted empty loses them even when it
// stayed down longer than the largest TTL: in a scenario whose nodes
// restart empty without fsync, fence-order breaks are counted apart and do
// not fail the run, as docs/design.md names that limit.
//
// The primitives on the same quorum have clients and checkers of their
// own, beside the lock's, through their own paths to the same faulted
// nodes in every scenario whose clients run in the test's process:
// permits of two semaphores (3 and 2 permits; more clients than that),
// held briefly, kept alive through long jobs or taken by Do; readers and
// writers of a read-write lock, some readers under RDo past their TTL;
// campaigners of an election, leading for several TTLs and resigning;
// and, in the full and long runs, an observer reading Leader and
// following Observe. CheckSemaphore reports an instant with more valid
// holds of a semaphore than its permits, CheckRWMutex a write hold held
// with any other hold, CheckElection two leaderships at once, a
// leadership without a term and terms (Fence) that do not rise in grant
// order; each also reports late losses and grants past their Until as
// Check does, and fencing tokens out of the order the holds impose (for
// permits and readers held together, only against holds returned before
// they were asked for). An Observe stream that repeats a value fails any
// scenario.
//
// Sets of names have clients of their own beside them, on six names of
// their own: each takes a random pair or triple of them with AcquireAll,
// in a random order and always fenced, holds it briefly and releases it.
// A set's grant is recorded once per name, with that name's fencing token
// (Lock.FenceOf) and the set's names, and CheckSets reads the records by
// the lock's own rules, name by name: no two holds of one name at once,
// whether by two sets or by one set twice, and each name's tokens rising
// in grant order. Their table (WriteSetTable) comes apart from the
// lock's, whose numbers stay comparable with earlier runs; their
// violations fail a safe scenario as the lock's do.
//
// Once every client has closed, the run reports
// goroutines left running, connections left open on a proxy or a node,
// and keys left on a node after the largest TTL.
//
// Every scenario also reports its availability: the grants per second
// of the lock's clients, and of each primitive's (a set counts once, not
// once per name), while its faults were in force, and their share of the
// baseline's (the scenario without faults) of the same run; a run that
// leaves the baseline out (-run) reports the rates alone. A scenario with a floor (MinAvailability)
// fails the full and long runs below that share of the baseline's lock
// grants per second; the short run only reports it.
//
// # Scenarios
//
// Five nodes, a few names, clients doing Acquire/Release with short
// holds, Do and KeepAlive with jobs several TTLs long, and DoOrSkip:
// without faults; a minority paused; a minority killed and restarted,
// empty, after the largest TTL; latency on a minority and on a majority;
// a majority black-holed and healed; long Do jobs while minorities and
// then majorities pause; all of it combined; and a majority restarted
// empty at once, one node after the other, which the README documents as
// unsafe: its overlaps are reported, they do not fail the run. The same
// restarts with appendfsync always are safe and must show none.
//
// Three more inject the faults that break real Redlock deployments:
//
//   - Clocks that run at different rates. Each client's key server for a
//     node is wrapped (Skewed) so that the node keeps time at a rate the
//     faults set (Clocks): a node whose clock runs fast by s gets TTLs
//     divided by 1+s, which in true time is what its fast clock would do
//     to the key. Some clients hold their locks to the very end of the
//     validity (Holdout), where the skew bites. With a majority 0.9% fast
//     and the rest anywhere within 0.9% (below the default drift factor of
//     1%) the run is safe; with a majority 10% fast it is not, and its
//     overlaps are reported as the documented limit, not failing the run.
//   - Asymmetric partitions. Every client has its own path to every node,
//     and the faults cut clients off nodes each its own way: split around
//     a bridge node (two sides whose quorums share only the bridge), or a
//     random view per client. Safe: 0 violations.
//   - Client processes stopped past their validity. The clients are
//     processes of their own (the test binary run again with childEnv
//     set; see childMain), half of them fenced on one name, half unfenced
//     on another. Each writes to a Store right after its grant and again
//     after a short job; the faults stop a holder with SIGSTOP and
//     continue it 1.2–2.5 TTLs later. The store keeps the writes in a
//     data Redis of its own (a redis-server beside the nodes, out of the
//     faults) and checks a fenced write there through the Redis guard
//     (fence/redisfence), which refuses a token below one it took for the
//     name and changes nothing then; an unfenced write bypasses the guard.
//     Independently, the store records, by grant order, every write that
//     came after a later holder's: each such fenced write must have been
//     refused by the guard (a StaleWrite violation otherwise), and the run
//     reports how many were and that none was accepted; the unfenced ones
//     are accepted and counted, the known limit of a lease without
//     fencing. The processes report their grants on stdout, on
//     the shared CLOCK_MONOTONIC, and are killed and waited for when the
//     test ends, however it ends.
//
// In the short run these three, and the unsafe skew, last half as long as
// the others.
//
// Four more hold one state for the whole run, for their availability: a
// failed minority must cost the clients nearly nothing, not only keep
// them safe. One node silent (stopped with SIGSTOP: connects succeed,
// nothing answers) since before the clients are made, two nodes silent
// so, one node silenced a quarter to half-way through, and one node dead
// (killed, its port closed: connects are refused) since before the
// clients are made, back only once the run is over. Each is safe, and
// must reach half the baseline's lock grants per second. They last
// Settings.Steady: 10 seconds in the full run, 2 in the short one.
//
// The last scenario stops client processes as the processes' scenario
// does, with every lock taken with a lock-delay of 2.5 TTLs
// (redlock.WithLockDelay): CheckLockDelay reports a grant that came after
// the Until of one that ran out unreleased, before that Until plus the
// delay and before its holder's late release (DelayBroken), so a stopped
// holder that wakes up finds nobody else granted its lock meanwhile.
//
// A scenario's seed fixes its fault schedule and the clients' draws; the
// interleaving with real time does not replay exactly.
//
// # Seams
//
// The functions of traffic_seams.go are where the suite meets the redlock
// API (Client.Close, the loss margin, LockFromContext, WithFencing and
// Lock.Fence): one place to adapt when that API changes.
//
// # Layout
//
// One package, its files named by concern (as etcd's tests/robustness
// splits failpoint, traffic, validate and report into packages), and one
// table of the kinds of hold, kinds.go's holdKinds, whose row for a kind
// (lock, lock with lock-delay, semaphore, read-write lock, election, set
// of names) gives its workloads, its checker and its report columns:
//
//   - kinds.go: the kinds table.
//   - faults: faults.go (the schedule: pauses, kills, restarts,
//     failovers, partitions, clocks, stops), faults_proxy.go (Proxy:
//     latency, black holes, resets), faults_skew.go (Clocks, Skewed, for
//     every ability of a key server), faults_procs*.go (the client
//     processes, which the faults stop and continue; their side is
//     childMain, which TestMain runs).
//   - traffic: traffic.go (the clients and every kind's workloads),
//     traffic_store.go (the Store the processes write to),
//     traffic_seams.go (the redlock API it calls).
//   - checks: check.go (Check and the rules every kind shares),
//     check_kinds.go (the other kinds' checkers), check_results.go (a
//     kind's result in a scenario), check_leaks.go, check_stalls.go (the
//     stalls of the test's process that excuse a late loss); CheckWrites
//     is with the Store.
//   - report: report_table.go (the tables, from the kinds' columns),
//     report_availability.go (grants per second against the baseline's).
//   - the run: history.go (the grants on one clock), scenario.go (the
//     scenarios and their settings), run.go (Run: one scenario from
//     start to check).
//
// It stays one package: the client processes are the test binary run
// again (TestMain → childMain), so the traffic's client, the faults'
// processes and the run share unexported state (client, faults, procs,
// Load), and subpackages would export dozens of names and split the
// processes between faults and traffic.
package chaos
