// Package chaos is goredlock's fault-injection suite: independent clients
// take locks on real Redis nodes through proxies that delay, black-hole and
// reset their traffic, while the nodes are paused, killed and restarted;
// then a checker reads everything the clients saw, on one monotonic clock,
// for broken promises. It is the evidence behind the README's "Guarantees
// and limits", and anyone can rerun it:
//
//	make chaos                 # every scenario at full length, about five minutes
//	make chaos SHORT=1         # the short run, which make test runs on every change
//	make chaos SEED=42         # replay a run's fault schedule and workload draws
//
// Its pieces also work on their own:
//
//	p, err := chaos.Listen(node.Addr()) // clients dial p.Addr() instead
//	p.BlackHole()                       // bytes are held from now on ...
//	p.Heal()                            // ... and delivered late, as after a partition
//	report := chaos.Check(history.Grants())
//
// # What is checked
//
// Each grant is recorded with the time it was returned to its holder, its
// Until, when Release was called, when the holder heard of a loss, and the
// loss margin in force. Check reports two holders of one name whose holds
// [granted, min(released, Until)] intersect, a loss heard after Until −
// margin, a grant returned after its Until, and fencing tokens that do not
// rise in grant order (every other client takes fenced locks). Fence
// counters have no TTL, so a node restarted empty loses them even when it
// stayed down longer than the largest TTL: in a scenario whose nodes
// restart empty without fsync, fence-order breaks are counted apart and do
// not fail the run, as the redlock package doc names that limit. Once
// every client has closed, the run reports
// goroutines left running, connections left open on a proxy or a node,
// and keys left on a node after the largest TTL.
//
// # Scenarios
//
// Five nodes, a few names, clients doing Acquire/Release with short
// holds, Do and KeepAlive with jobs several TTLs long, and DoOrSkip:
// without faults; a minority paused; a minority killed and restarted,
// empty, after the largest TTL; latency on a minority and on a majority;
// a majority black-holed and healed; long jobs while minorities and then
// majorities pause; all of it combined; and a majority restarted empty at
// once, one node after the other, which the README documents as unsafe:
// its overlaps are reported, they do not fail the run. The same restarts
// with appendfsync always are safe and must show none.
//
// A scenario's seed fixes its fault schedule and the clients' draws; the
// interleaving with real time does not replay exactly.
//
// # Seams
//
// The functions of seams.go are where the suite meets the redlock API
// (Client.Close, the loss margin, LockFromContext, WithFencing and
// Lock.Fence): one place to adapt when that API changes.
package chaos
