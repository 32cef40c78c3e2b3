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
//	redlock leader scheduler                                # who leads the election "scheduler"
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
//	--grace D          after the lock is lost, time between SIGTERM and SIGKILL to
//	                   COMMAND [10s].
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
//	REDLOCK_NAME   the lock's name
//	REDLOCK_TOKEN  the random value that marks this holder's keys on the servers
//	REDLOCK_FENCE  the fencing token, with --fence only
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
//	redlock status [--servers URL,...] NAME
//
// status prints one line per server, in the order given: host:port, then
// "held" and the time the key has left (with "by holder K" when servers
// hold different tokens), "free", or "error:" and why. It only reads
// (INFO, PTTL and GET, over a connection of its own to each server, at
// most 2s each) and never prints a token. Two servers that are one Redis
// under two names (127.0.0.1 and localhost) are a usage error (64) that
// names both: that Redis would count twice.
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
// # redlock help, redlock --version
//
// redlock help (or redlock -h) prints this manual; redlock help run and
// redlock run -h, redlock help status and redlock status -h (and leader),
// a subcommand's flags. redlock --version (or redlock version) prints the module version
// the binary was built from, "(devel)" for a build from a checkout.
//
// # Exit status
//
//	0        run: COMMAND exited 0, or --skip skipped it; status: no quorum holds NAME;
//	         leader: a leader's value printed; help and --version
//	1        status: a quorum of servers holds NAME with one token; leader: no leader
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
