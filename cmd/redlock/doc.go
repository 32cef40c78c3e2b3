// Command redlock runs a command while holding a distributed lock on a
// majority of independent Redis servers (the Redlock algorithm): a
// distributed flock(1) for cron jobs, migrations and backups that must run
// on one host of many at a time.
//
//	export REDLOCK_SERVERS=redis://10.0.0.1:6379,redis://10.0.0.2:6379,redis://10.0.0.3:6379
//	redlock run --skip nightly-report -- /usr/local/bin/nightly-report --full
//	redlock run --wait 10m schema-migration -- ./migrate up
//	redlock status nightly-report
//	redlock run --permits 2 --wait 1h reindex -- ./reindex   # at most 2 hosts at once
//	redlock run --also ledger accounts -- ./transfer         # both locks or neither
//	redlock leader scheduler                                # who leads the election "scheduler"
//	redlock doctor                                          # what each server is, and allows
//
// Install it with
//
//	go install github.com/goredlock/goredlock/cmd/redlock@latest
//
// # redlock run
//
//	redlock run [flags] NAME -- COMMAND [ARGS...]
//
// run takes the lock NAME, runs COMMAND with its arguments (directly, not
// through a shell: write sh -c '...' for one), keeps the lock alive in the
// background while COMMAND runs, and releases it when COMMAND exits. It
// exits only once the release has reached every server (answered or timed
// out), so no key outlives the tool. Flags go before NAME; the "--" is
// required.
//
// The key on the servers is NAME itself, with no prefix, as a default
// redlock.Client of package github.com/goredlock/goredlock/redlock stores
// it: programs that use the library and scripts that use the tool exclude
// each other when they use the same name and servers.
//
// Flags:
//
//	--servers URL,...  the servers, as redis://[[user]:password@]host[:port][/db][?param=value]
//	                   or rediss:// for TLS, one independent Redis master each;
//	                   default $REDLOCK_SERVERS. Required. 3 or 5 in production.
//	--ttl D            the lock's time to live [30s], at least 100ms. The lock is
//	                   extended every third of it; if extensions fail, the lock is
//	                   declared lost a little before the TTL runs out.
//	--wait D           how long to keep trying while the lock is held elsewhere
//	                   [0: one attempt]. Attempts are spaced 100ms, doubling up to
//	                   about 1s. Servers failing are retried within --wait too,
//	                   but not failures that retrying cannot fix (a rejected
//	                   password, a key of the wrong type): these end it at once
//	                   with status 69.
//	--skip             when the lock is (still, after --wait) held elsewhere, say so
//	                   on stderr and exit 0 without running COMMAND: for a job that
//	                   every host starts and one should do. Servers that do not
//	                   answer are never a skip.
//	--fence            take the lock with a fencing token, passed as $REDLOCK_FENCE:
//	                   a number that grows with every grant of NAME, for storage
//	                   that rejects writes from a holder whose lock was lost.
//	--permits N        hold one of N permits of the semaphore NAME instead of the
//	                   lock NAME [0: the lock]: at most N hosts run COMMAND at once,
//	                   as with consul lock -n. A semaphore keeps its own keys, so a
//	                   lock and a semaphore of one name do not exclude each other;
//	                   every host must give the same N (one that differs while
//	                   permits are held fails with status 69).
//	--also NAME2       hold the lock NAME2 too, for a job that needs several
//	                   locks: repeat it for more (at most 64 names in all). The
//	                   names are taken all or none, each server taking them in
//	                   one step, so runs that name overlapping sets in any order
//	                   never hold part of one and never deadlock; NAME2 is a lock
//	                   of its own, which a run of NAME2 alone excludes. Every
//	                   other flag applies to the whole set: held elsewhere means
//	                   that another holds at least one of the names. Not with
//	                   --permits.
//	--grace D          after the lock is lost, time between SIGTERM and SIGKILL to
//	                   COMMAND [10s].
//	--no-quarantine    count the grants of servers that lost their data (restarted
//	                   without persistence, or first used) less than --ttl ago.
//	                   By default they do not count until --ttl has passed since,
//	                   so that a run started after a majority of the servers
//	                   restarted empty is not granted a lock that another holder
//	                   still has: it exits 75 while the servers that kept their
//	                   data refuse, 69 while too few can answer. A brand-new
//	                   deployment waits up to --ttl before its first grant.
//	                   status and leader report what the servers hold, and a
//	                   server that lost its data holds nothing.
//
// A server that fails the first attempt (down, or rejecting the password)
// gets a line on stderr, even when the other servers grant the lock.
// A URL's password never appears in the tool's messages; percent-encode
// % / ? # @ in it. A rediss:// server is verified against the system's
// certificate authorities; SSL_CERT_FILE or SSL_CERT_DIR add a private one.
//
// COMMAND inherits redlock's standard input, output and error, and its
// environment with these added (replacing any inherited from an enclosing
// redlock run):
//
//	REDLOCK_NAME   the lock's name; with --also, every name, NAME first, joined
//	               by commas
//	REDLOCK_TOKEN  the random value that marks this holder's keys on the servers
//	REDLOCK_FENCE  the fencing token, with --fence only; with --also, each name's,
//	               in REDLOCK_NAME's order, joined by commas
//
// Standard output is COMMAND's alone. redlock's own messages go to standard
// error, one line each, starting with "redlock: ".
//
// # Signals
//
// SIGINT and SIGTERM sent to redlock are passed on to COMMAND, and so are
// SIGHUP, SIGQUIT, SIGUSR1 and SIGUSR2, which would otherwise end redlock
// and leave COMMAND running without its lock kept alive. redlock waits for
// COMMAND to exit, releases the lock and exits with COMMAND's status. A
// signal that arrives while redlock is still waiting for the lock ends it
// with 128+N, without running COMMAND.
//
// Signals reach COMMAND's process only, not its children: a shell script
// should exec its last command, or trap the signal and pass it on. In the
// foreground of a terminal, Ctrl-C reaches COMMAND from the terminal and
// again from redlock, so COMMAND sees SIGINT twice. On Linux, if redlock
// itself is killed (SIGKILL), the kernel sends COMMAND SIGTERM: nothing
// keeps the lock alive any more.
//
// If the lock is lost while COMMAND runs (the servers stopped answering
// for most of a TTL, or another holder took it), redlock sends COMMAND
// SIGTERM, then SIGKILL after --grace, and exits 70: another process may
// hold the lock by then.
//
// # redlock status
//
//	redlock status [--servers URL,...] [--json] [--lock-delay D] NAME
//
// status shows who holds what under NAME, for every kind of hold: the lock
// NAME, the semaphore NAME (run --permits), and the read-write lock and the
// election NAME of programs that use package redlock. It prints one line
// per server, in the order given: host:port, then "held", the time the
// lock has left and its holder's tag, or "free"; then, when there is
// something to say, the waiters in the lock's line, its fence, a
// lock-delay in force (see --lock-delay), "semaphore I of N permits" ("at least I" when the
// servers hold more permits than one read lists, 1,024), the read-write
// lock's readers (likewise) or writer, and the election's leader (its value), the time its
// leadership has left and its term; or "error:" and why. A last line,
// "quorum:", is the verdict: what a quorum of the servers agrees on (a
// hold counts when a quorum holds it with one token), or "too few servers
// answered to tell". A tag names a holder without its token: the 8
// hexadecimal digits after the dot of $REDLOCK_TOKEN for holders of this
// module, "#" and 8 hexadecimal digits of a hash for others; it cannot
// release anything. status only reads (one script per server, over a
// connection of its own, at most 2s each) and never prints a token. Two
// servers that are one Redis under two names (127.0.0.1 and localhost) are
// a usage error (64) that names both: that Redis would count twice.
//
// A lock taken with a lock-delay D (package redlock's WithLockDelay; run
// takes none) keeps its key for its TTL and then D, and the servers keep
// no other trace of the delay: --lock-delay D, the delay its holders use,
// has status read the last D of the key's TTL as the delay in force
// ("free", and "lock-delay" with the time left) and the rest as the lock
// held. Without it, the whole TTL is read as held.
//
// With --json, status prints one JSON object on one line instead, with the
// same exit status (an unset count is 0, an unset string ""):
//
//	{"name": "job", "held": true, "decided": true, "quorum": 2,
//	 "lock": {"held": true, "holder": "5f3a9c21", "ttl_ms": 19500, "waiters": 1,
//	          "fence": 12, "delay_ms": 0},
//	 "semaphore": {"permits": 3, "in_use": 2, "waiters": 0, "truncated": false},
//	 "rw": {"readers": 0, "writer": "", "writer_waiting": false, "waiters": 0, "truncated": false},
//	 "election": {"leader": "host-a", "ttl_ms": 9000, "term": 3},
//	 "servers": [{"server": "10.0.0.1:6379", "lock": {...}, "semaphore": {...},
//	              "rw": {...}, "election": {...}},
//	             {"server": "10.0.0.2:6379", "error": "..."}, ...]}
//
// The top-level lock, semaphore, rw and election are the quorum's verdict;
// each entry of servers (in the order given) has the same four for that
// server, or only "error" when it could not be read. "held" is what exit
// status 1 means; "decided" is false when too few servers answered to tell
// (exit status 69 unless held). ttl_ms is the time left (-1 for a key
// without a TTL, 0 when not held), delay_ms a lock-delay's time left,
// holder and writer are tags, and "truncated" says that in_use or readers
// is the least number held: a server held more than one read lists.
//
// # redlock leader
//
//	redlock leader [--servers URL,...] NAME
//
// leader prints the value of the leader of the election NAME (what a
// program of package redlock passed to Election.Campaign), when a quorum
// of the servers agree on the same leader; it only reads, at most 2s. As
// with status, two servers that are one Redis are a usage error (64).
//
// # redlock doctor
//
//	redlock doctor [--servers URL,...] [--json]
//
// doctor asks each server, all at once and at most 5s in all, what it is and
// what goredlock will do there, and prints, per server in the order given, a
// line with its host:port, "usable" or "UNUSABLE", and what it is (engine
// and version, role, cluster mode, persistence, eviction policy, as far as
// the server lets the URL's user read them); then one indented line per
// problem, per feature and per warning, and a last line, "verdict:". Each
// feature "works", or works "degraded" (and how), or is "refused" (and the
// command or ACL rule that would allow it):
//
//	locks              every kind of hold: refused where the server cannot run
//	                   the scripts that extend and release (EVAL, EVALSHA, a
//	                   command they call), which then grants nothing
//	wake-ups           waiters woken by Pub/Sub; degraded: they poll
//	script digests     scripts run by digest; degraded: sent by their source
//	restart detection  the store's marker and INFO's run id; degraded without
//	                   INFO: a restart that reloads a snapshot is not told
//	durability         CONFIG says whether every write is fsynced; degraded
//	                   when denied: every restart quarantines for a TTL
//
// A server is unusable or unsafe when it is unreachable or refuses the
// password, is a replica, has a policy that can evict lock keys (allkeys-*,
// or volatile-* with maxmemory set), is one store named twice (two URLs
// whose stores hold one marker), or refuses locks. What it could not read
// (INFO or CONFIG denied, as for a user with +@all -@dangerous, which is
// usable) is a warning. doctor writes nothing but the store's marker key
// (goredlock:incarnation), as any client's first call does. The same checks
// are redis.Diagnose in package github.com/goredlock/goredlock/keyserver/redis.
//
// With --json, doctor prints one JSON object on one line instead, with the
// same exit status; a field that does not apply is left out:
//
//	{"usable": false,
//	 "servers": [{"server": "10.0.0.1:6379", "engine": "redis", "version": "7.0.15",
//	              "role": "master", "cluster": false,
//	              "persistence": "no AOF, no RDB snapshots", "eviction": "noeviction",
//	              "store": "4059d48737bbc1fc6d413650",
//	              "features": [{"name": "locks", "support": "works", "detail": "..."}, ...],
//	              "problems": ["..."], "warnings": ["..."]}, ...]}
//
// "usable" is true when every server is (exit status 0); a server is usable
// when it has no "problems".
//
// # redlock help, redlock --version
//
// redlock help (or redlock -h) prints this manual; redlock help run and
// redlock run -h, redlock help status and redlock status -h (and leader
// and doctor), a subcommand's flags. redlock --version (or redlock version) prints the module version
// the binary was built from, "(devel)" for a build from a checkout.
//
// # Exit status
//
//	0        run: COMMAND exited 0, or --skip skipped it; status: no quorum holds anything of NAME;
//	         leader: a leader's value printed; doctor: every server usable; help and --version
//	1        status: a quorum of servers holds the lock, a permit, a read or write hold
//	         or the leadership NAME (each with one token); leader: no leader;
//	         doctor: a server is unusable or unsafe
//	N        run: COMMAND's exit status; 128+N when signal N ended it
//	64       usage: bad flags, missing NAME, "--" or COMMAND, no servers, a bad URL
//	         (no server was contacted), or two servers that are one Redis (found
//	         when they answered); one line on stderr
//	69       too few servers answered: run could not take the lock (never a skip),
//	         or failed at once on an error retrying cannot fix; status and leader
//	         could not tell, as the servers that failed could complete a quorum
//	70       run: the lock was lost while COMMAND ran, or a quorum of servers no
//	         longer held it when COMMAND ended
//	75       run: the lock is held elsewhere (after --wait); the message names it
//	126, 127 run: COMMAND cannot be executed, or was not found; the lock is not
//	         taken, or released at once
package main

// The package doc above is also manual.txt, which redlock help prints:
// change both (TestManualMatchesDoc checks that they agree).
