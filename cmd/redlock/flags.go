package main

import (
	_ "embed"
	"errors"
	"flag"
	"io"
	"regexp"
	"strings"
	"time"

	"github.com/goredlock/goredlock/redlock"
)

// synopsis is the one line of help each usage error ends with.
var synopsis = map[string]string{
	"":       "redlock run [flags] NAME -- COMMAND [ARGS...] | redlock status [--servers URL,...] [--json] NAME | redlock leader [--servers URL,...] NAME | redlock doctor [--servers URL,...] [--json] | redlock help | redlock --version",
	"run":    "redlock run [--servers URL,...] [--ttl D] [--wait D] [--skip] [--fence] [--permits N] [--also NAME2 ...] [--grace D] NAME -- COMMAND [ARGS...]",
	"status": "redlock status [--servers URL,...] [--json] [--lock-delay D] NAME",
	"leader": "redlock leader [--servers URL,...] NAME",
	"doctor": "redlock doctor [--servers URL,...] [--json]",
}

// manual is what redlock help and redlock -h print: the package doc.
//
//go:embed manual.txt
var manual string

// help is what redlock SUBCOMMAND -h prints, on stdout; redlock -h
// prints the manual.
var help = map[string]string{
	"": manual,
	"run": `usage: ` + synopsis["run"] + `

Runs COMMAND (directly, not through a shell) while holding the lock NAME on a
majority of the Redis servers, and releases it when COMMAND exits.

  --servers URL,...  redis:// or rediss:// URLs of independent Redis masters
                     (default: $REDLOCK_SERVERS)
  --ttl D            the lock's time to live, renewed in the background (default 30s)
  --wait D           how long to keep trying while the lock is held elsewhere
                     (default 0: one attempt)
  --skip             when the lock is still held elsewhere, exit 0 without
                     running COMMAND instead of exiting 75
  --fence            pass a fencing token to COMMAND as $REDLOCK_FENCE
  --permits N        run while holding one of N permits of the semaphore NAME
                     instead of the lock NAME: at most N hosts at once
                     (default 0: the lock)
  --also NAME2       hold the lock NAME2 too, taken with NAME all or nothing;
                     repeat it for more names (up to 64 in all)
  --grace D          after the lock is lost, time between SIGTERM and SIGKILL
                     to COMMAND (default 10s)

COMMAND gets $REDLOCK_NAME and $REDLOCK_TOKEN (with --also, $REDLOCK_NAME
is every name, NAME first, joined by commas, and $REDLOCK_FENCE their fencing
tokens in that order). Exit status: COMMAND's (128+N
for signal N), 64 usage, 69 servers unavailable, 70 lock lost, 75 held
elsewhere, 126/127 COMMAND not executable / not found.
`,
	"status": `usage: ` + synopsis["status"] + `

Prints one line per server, in the given order: host:port, then "held" with
the time the lock NAME has left and its holder's tag, or "free", and what else
the name has (waiters, fence, lock-delay, semaphore permits, readers or writer,
leader and term); or "error" and why. A last line gives the quorum's verdict.

  --servers URL,...  redis:// or rediss:// URLs (default: $REDLOCK_SERVERS)
  --json             print one JSON object instead (its shape: redlock help)
  --lock-delay D     the lock-delay the lock's holders take it with
                     (redlock.WithLockDelay): the lock key lives its lease
                     and then D, which status tells apart (default 0)

Exit status: 0 when no quorum holds anything of NAME, 1 when a quorum holds
the lock, a permit, a read or write hold or the leadership NAME, 64 usage, 69
when too few servers answered to tell.
`,
	"leader": `usage: ` + synopsis["leader"] + `

Prints the value of the leader of the election NAME, as a quorum of the
servers agree on it (what the leader passed to Election.Campaign).

  --servers URL,...  redis:// or rediss:// URLs (default: $REDLOCK_SERVERS)

Exit status: 0 and the value on stdout when a quorum agrees on a leader, 1
when none leads, 64 usage, 69 when too few servers answered to tell.
`,
	"doctor": `usage: ` + synopsis["doctor"] + `

Asks each server what it is (engine and version, role, cluster mode,
persistence, eviction policy) and what goredlock will do there: each feature
works, works degraded (and how) or is refused (and what would allow it). It
writes nothing but the store's marker key, at most 5s in all.

  --servers URL,...  redis:// or rediss:// URLs (default: $REDLOCK_SERVERS)
  --json             print one JSON object instead (its shape: redlock help)

Exit status: 0 when every server is usable, 1 when one is unusable or unsafe
(unreachable, a replica, a policy that can evict lock keys, one store named
twice, locks refused), 64 usage.
`,
}

// errHelp asks for the help of a subcommand, printed on stdout, exit 0.
type errHelp string

func (e errHelp) Error() string { return "help for " + string(e) }

// minTTL is the shortest --ttl: each server has 5% of the TTL to answer,
// and under 5 ms is too little for anything but a server on the same host.
const minTTL = 100 * time.Millisecond

// runConfig is a parsed command line of redlock run.
type runConfig struct {
	servers []string // URLs, as given
	name    string
	command []string // COMMAND and its ARGS
	ttl     time.Duration
	wait    time.Duration
	grace   time.Duration
	skip    bool
	fence   bool
	// noQuarantine counts the grants of servers that lost their data
	// less than a TTL ago (--no-quarantine).
	noQuarantine bool
	permits      int      // 0: the lock NAME; N: a permit of the semaphore NAME
	also         []string // --also: more names, held with NAME all or nothing
}

// statusConfig is a parsed command line of redlock status, and of redlock
// leader.
type statusConfig struct {
	servers []string
	name    string
	json    bool // status --json
	// lockDelay is status --lock-delay: a server keeps no trace of a
	// lock-delay but the key's TTL, so status needs the holders' delay to
	// tell the lease from the delay after it.
	lockDelay time.Duration
}

// newFlagSet returns a flag set that reports errors to its caller only:
// the tool prints them, one line each.
func newFlagSet(sub string) *flag.FlagSet {
	fs := flag.NewFlagSet("redlock "+sub, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return fs
}

// parseRun reads redlock run's arguments: flags, NAME, "--", COMMAND.
func parseRun(args []string, getenv func(string) string) (*runConfig, error) {
	c := &runConfig{}
	fs := newFlagSet("run")
	servers := fs.String("servers", "", "")
	c.ttl, c.grace = 30*time.Second, 10*time.Second
	fs.Var(duration{&c.ttl}, "ttl", "")
	fs.Var(duration{&c.wait}, "wait", "")
	fs.Var(duration{&c.grace}, "grace", "")
	fs.BoolVar(&c.skip, "skip", false, "")
	fs.BoolVar(&c.fence, "fence", false, "")
	fs.BoolVar(&c.noQuarantine, "no-quarantine", false, "")
	fs.IntVar(&c.permits, "permits", 0, "")
	fs.Var(appendName{&c.also}, "also", "")

	// COMMAND starts after the first "--"; the flag package would take
	// that "--" for the end of the flags and lose it.
	before, command, sep := splitAtDashes(args)
	if err := parseFlags(fs, "run", before); err != nil {
		return nil, err
	}
	rest := fs.Args()
	switch {
	case !sep:
		return nil, usagef("run", `missing "--" between NAME and COMMAND`)
	case len(rest) == 0:
		return nil, usagef("run", "missing NAME")
	case len(rest) > 1:
		return nil, usagef("run", `unexpected %q after NAME: flags go before NAME, COMMAND after "--"`, rest[1])
	case rest[0] == "":
		return nil, usagef("run", "empty NAME")
	case len(command) == 0:
		return nil, usagef("run", `missing COMMAND after "--"`)
	case command[0] == "":
		return nil, usagef("run", "empty COMMAND")
	case c.ttl < minTTL:
		return nil, badf("--ttl %v is under the minimum of %v", c.ttl, minTTL)
	case c.wait < 0:
		return nil, badf("--wait %v is negative", c.wait)
	case c.grace < 0:
		return nil, badf("--grace %v is negative", c.grace)
	case c.permits < 0:
		return nil, badf("--permits %d is negative", c.permits)
	case c.permits > 0 && len(c.also) > 0:
		return nil, usagef("run", "--also and --permits do not go together: a semaphore has one NAME")
	case len(c.also)+1 > redlock.MaxNames:
		return nil, usagef("run", "%d names: at most %d (NAME and --also)", len(c.also)+1, redlock.MaxNames)
	}
	c.name, c.command = rest[0], command
	c.also = dedupe(c.name, c.also)
	var err error
	if c.servers, err = serverList("run", *servers, getenv); err != nil {
		return nil, err
	}
	return c, nil
}

// doctorConfig is a parsed command line of redlock doctor.
type doctorConfig struct {
	servers []string
	json    bool
}

// parseDoctor reads the arguments of redlock doctor: flags only.
func parseDoctor(args []string, getenv func(string) string) (*doctorConfig, error) {
	fs := newFlagSet("doctor")
	servers := fs.String("servers", "", "")
	c := &doctorConfig{}
	fs.BoolVar(&c.json, "json", false, "")
	if err := parseFlags(fs, "doctor", args); err != nil {
		return nil, err
	}
	if rest := fs.Args(); len(rest) > 0 {
		return nil, usagef("doctor", "unexpected %q: doctor takes flags only", rest[0])
	}
	urls, err := serverList("doctor", *servers, getenv)
	if err != nil {
		return nil, err
	}
	c.servers = urls
	return c, nil
}

// parseStatus reads the arguments of redlock status, or of redlock
// leader (sub): flags, then NAME.
func parseStatus(sub string, args []string, getenv func(string) string) (*statusConfig, error) {
	fs := newFlagSet(sub)
	servers := fs.String("servers", "", "")
	c := &statusConfig{}
	if sub == "status" {
		fs.BoolVar(&c.json, "json", false, "")
		fs.Var(duration{&c.lockDelay}, "lock-delay", "")
	}
	if err := parseFlags(fs, sub, args); err != nil {
		return nil, err
	}
	rest := fs.Args()
	switch {
	case len(rest) == 0:
		return nil, usagef(sub, "missing NAME")
	case len(rest) > 1:
		return nil, usagef(sub, "unexpected %q after NAME: flags go before NAME", rest[1])
	case rest[0] == "":
		return nil, usagef(sub, "empty NAME")
	case c.lockDelay < 0 || c.lockDelay > redlock.MaxLockDelay:
		return nil, badf("--lock-delay %v is not between 0 and %v", c.lockDelay, redlock.MaxLockDelay)
	}
	urls, err := serverList(sub, *servers, getenv)
	if err != nil {
		return nil, err
	}
	c.servers, c.name = urls, rest[0]
	return c, nil
}

// parseFlags parses args into fs, turning -h into errHelp and any other
// failure into a usage error.
func parseFlags(fs *flag.FlagSet, sub string, args []string) error {
	err := fs.Parse(args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		return errHelp(sub)
	case err != nil:
		return usagef(sub, "%s", dashDash(err.Error()))
	}
	return nil
}

// flagName is a flag as the flag package's errors name it, "-ttl".
var flagName = regexp.MustCompile(`(^|[ ])-([A-Za-z][A-Za-z0-9_-]*)`)

// dashDash names flags in a flag package error as the help does: --ttl,
// not -ttl.
func dashDash(msg string) string {
	return flagName.ReplaceAllString(msg, "${1}--${2}")
}

// helpFor is redlock help [SUBCOMMAND].
func helpFor(args []string) error {
	switch {
	case len(args) == 0:
		return errHelp("")
	case len(args) > 1:
		return usagef("", "unexpected %q after help %s", args[1], args[0])
	case args[0] == "run" || args[0] == "status" || args[0] == "leader" || args[0] == "doctor":
		return errHelp(args[0])
	}
	return usagef("", "no help for %q: redlock help, redlock help run, redlock help status, redlock help leader or redlock help doctor", args[0])
}

// duration is a flag.Value for a time.Duration whose error says what a
// duration looks like; the flag package's own says "parse error".
type duration struct{ d *time.Duration }

func (f duration) String() string {
	if f.d == nil {
		return "0s"
	}
	return f.d.String()
}

func (f duration) Set(s string) error {
	d, err := time.ParseDuration(s)
	if err != nil {
		return errors.New("not a duration such as 500ms, 30s or 1h30m")
	}
	*f.d = d
	return nil
}

// appendName is a flag.Value that adds each use's name to a list: --also
// NAME2 --also NAME3.
type appendName struct{ names *[]string }

func (f appendName) String() string {
	if f.names == nil {
		return ""
	}
	return strings.Join(*f.names, ",")
}

func (f appendName) Set(s string) error {
	if s == "" {
		return errors.New("empty name")
	}
	*f.names = append(*f.names, s)
	return nil
}

// dedupe drops from also the names given before, NAME's among them, as
// the client would: each name is held once.
func dedupe(name string, also []string) []string {
	seen := map[string]bool{name: true}
	out := also[:0]
	for _, n := range also {
		if !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// splitAtDashes splits args at the first "--", reporting whether there
// was one.
func splitAtDashes(args []string) (before, after []string, found bool) {
	for i, a := range args {
		if a == "--" {
			return args[:i], args[i+1:], true
		}
	}
	return args, nil, false
}

// serverList returns the URLs of --servers, or else of $REDLOCK_SERVERS:
// comma-separated, blanks around them and empty entries ignored.
func serverList(sub, flagValue string, getenv func(string) string) ([]string, error) {
	raw := flagValue
	if raw == "" {
		raw = getenv("REDLOCK_SERVERS")
	}
	var urls []string
	for _, u := range strings.Split(raw, ",") {
		if u = strings.TrimSpace(u); u != "" {
			urls = append(urls, u)
		}
	}
	if len(urls) == 0 {
		return nil, usagef(sub, "no servers: give --servers URL,... or set REDLOCK_SERVERS")
	}
	return urls, nil
}
