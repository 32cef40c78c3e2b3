// Package gocronlock lets gocron v2 schedulers on several hosts share their
// jobs: its [Locker] is a gocron.Locker whose locks are goredlock Redlock
// locks, so that each run of a job happens on one host only. It is a
// module of its own, so that users of goredlock who do not use gocron
// never download it.
//
//	client, err := redlock.New(servers) // the same key servers on every host
//	if err != nil { return err }
//	defer client.Close()
//	locker, err := gocronlock.New(client, gocronlock.WithMinHold(time.Second))
//	s, err := gocron.NewScheduler(gocron.WithDistributedLocker(locker))
//
// Every host schedules the same jobs under the same names (gocron passes
// the job's name as the key; without gocron.WithName it is the Go
// function's name, which differs if the code does). A Locker can also be
// given to one job only, with gocron.WithDistributedJobLocker.
//
// # What a lock does
//
// When a job is due, gocron calls Lock with the job's name. Lock takes the
// lock called prefix+name ([WithKeyPrefix]) with
// [redlock.Client.DoOrSkip], so it has DoOrSkip's rules: if a quorum of
// key servers answers that another host holds the lock, Lock fails at
// once with an error satisfying
// errors.Is(err, redlock.ErrHeldElsewhere) (and redlock.ErrNotAcquired),
// and gocron skips this run on this host (it counts a skip and calls the
// job's gocron.AfterLockError listener, if any). A split vote or failing
// servers are retried as the client's retry options say; when the retries
// run out, that is an error too, and the run is skipped on this host.
// gocron never retries a run whose Lock failed.
//
// While the job runs, the lock is kept alive in the background (see
// [redlock.Lock.KeepAlive]): it is extended every third of its TTL
// ([WithTTL]), so a job may run far longer than the TTL, while the lock of a
// host that crashed frees itself within one TTL.
//
// When the job returns, gocron calls Unlock. The lock is kept until at
// least the minimum hold ([WithMinHold]) after it was granted, even when the
// job ended sooner: instead of deleting the keys, Unlock cuts their TTL to
// what is left of the hold (redlock.WithMinHold, the rule DoOrSkip
// follows). Hosts whose clocks, or schedulers, fire a little later than
// the first then find the lock held and skip, instead of running a short
// job a second time. The minimum hold must be longer than the spread of
// the hosts' firing times, and shorter than the job's interval less that
// spread, or the next run finds the lock still held on every host and is
// skipped everywhere. Once the hold has passed, or when the job outlasted
// it, Unlock deletes the keys.
//
// Unlock returns once the key servers were told, which each call bounds by
// the client's server timeout; it then leaves nothing running, and ignores
// its context's cancellation (gocron passes the job's context, which ends
// when the scheduler shuts down). Every lock that Lock returned must be
// unlocked once; gocron does so.
//
// A lock can still be lost while its job runs: the key servers
// unreachable for longer than the lock's validity, or another holder
// found on a quorum of them. gocron gives a Locker no way to stop a
// running job, so the job keeps running; [WithOnLost] names a function to
// call when that happens, and Unlock's error then satisfies
// errors.Is(err, redlock.ErrLockLost) (gocron discards it).
//
// # Future work
//
// gocron's other hook, gocron.WithDistributedElector, takes an Elector
// (IsLeader(ctx) error) that lets only an elected leader schedule jobs.
// goredlock now has the primitive it needs ([redlock.Client.Election]);
// this package does not offer an Elector over it yet.
package gocronlock
