package redis

import (
	"context"
	"regexp"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/goredlock/goredlock/internal/layout"
)

// No grant the client cannot undo (rule 15): a lock's extend and release
// are scripts, so a server that cannot run them must grant nothing, where
// a plain SET NX would succeed and leave a key nobody can release before
// its TTL. Before a Server's first write (its first SET NX or granting
// script) it makes sure, once, that the server runs EVAL and EVALSHA for
// this user, and that the user may run every command the scripts call
// (Redis 7.0 and later tell it to a script: redis.acl_check_cmd). A
// refusal names what is missing (a *RefusedError, keyserver.ErrPermanent)
// and is returned by every write, without asking again, for
// recheckRefused.

// recheckRefused is how long a Server answers its writes with a refusal
// it found before asking the server again (an operator may have changed
// the ACL meanwhile): one check a minute at most, never a retry loop.
var recheckRefused = time.Minute

// scriptCheck is what a Server knows of its server's scripting.
type scriptCheck struct {
	ok atomic.Bool // the server runs what the scripts need: never asked again

	mu        sync.Mutex
	refused   error         // the last check's refusal, a *RefusedError
	refusedAt time.Time     // when it was found
	checking  chan struct{} // while a check runs; closed when it ends
}

// checkSrc is the check's script: of the commands the scripts call,
// those the user may not run (one the server lacks counts), none where
// the server cannot tell (before Redis 7.0). Each is checked with whole
// arguments on the store's marker, a key the user must reach anyway:
// Redis 7.0 reads past the arguments of a command checked without them
// for a user limited to some keys (wrong answers, and a crash seen). The
// commands are written in the source: as arguments they would pass the
// transports' bound on a command's words.
var checkSrc = sync.OnceValue(func() string {
	var b strings.Builder
	b.WriteString("local K = '" + layout.IncarnationKey + "'\nlocal missing = {}\nif redis.acl_check_cmd then\n\tfor _, c in ipairs({")
	for i, c := range scriptCommands() {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString("{'" + c + "'")
		for _, a := range checkArgs[c] {
			if a == "K" {
				b.WriteString(", K")
			} else {
				b.WriteString(", '" + a + "'")
			}
		}
		b.WriteString("}")
	}
	b.WriteString(`}) do
		local ok, allowed = pcall(redis.acl_check_cmd, unpack(c))
		if not ok or not allowed then
			missing[#missing + 1] = c[1]
		end
	end
end
return missing`)
	return b.String()
})

// checkArgs are, for each command the scripts call, arguments that make a
// whole call of it, K standing for the marker's key. TestCheckArgs keeps
// it up to date with the scripts.
var checkArgs = map[string][]string{
	"DEL": {"K"}, "EXISTS": {"K"}, "GET": {"K"}, "MGET": {"K"}, "PTTL": {"K"}, "TIME": nil,
	"HGET": {"K", "f"}, "HMGET": {"K", "f"}, "HSET": {"K", "f", "v"},
	"PEXPIRE": {"K", "1"}, "SET": {"K", "v"},
	"ZADD": {"K", "0", "m"}, "ZCARD": {"K"}, "ZCOUNT": {"K", "0", "1"}, "ZPOPMIN": {"K"},
	"ZRANGE": {"K", "0", "1"}, "ZRANK": {"K", "m"}, "ZREM": {"K", "m"},
	"ZREMRANGEBYSCORE": {"K", "0", "1"}, "ZSCORE": {"K", "m"},
}

// noDigest is a script digest no server knows: EVALSHA of it answers
// NOSCRIPT where EVALSHA may run, and a refusal where it may not.
const noDigest = "0000000000000000000000000000000000000000"

// scriptCommands is every command the scripts call with redis.call, read
// from their sources; the PUBLISH they call in pcall is left out, as a
// user denied it still locks (its waiters are not woken: they poll).
var scriptCommands = sync.OnceValue(func() []string {
	seen := map[string]bool{}
	call := regexp.MustCompile(`redis\.call\('([A-Z]+)'`)
	for _, sc := range scripts {
		for _, m := range call.FindAllStringSubmatch(sc.src, -1) {
			seen[m[1]] = true
		}
	}
	cmds := make([]string, 0, len(seen))
	for c := range seen {
		cmds = append(cmds, c)
	}
	sort.Strings(cmds)
	return cmds
})

// scriptingChecked reports whether the server is known to run the
// scripts, without asking it.
func (s *Server) scriptingChecked() bool { return s.scripting.ok.Load() }

// checkScripting returns nil once the server is known to run what the
// scripts need, asking it the first time (one check at a time, which the
// others wait for); otherwise the refusal, named for op on key, or the
// error that kept the check from an answer (asked again next time). sc is
// the script about to run, nil for a SET NX; a script that grants nothing
// (a release, leaving a line, a read) is not held up: a release queued on
// a paused server runs when it resumes. The caller has entered.
func (s *Server) checkScripting(ctx context.Context, op, key string, sc *script) error {
	c := &s.scripting
	if c.ok.Load() || sc != nil && !sc.grants {
		return nil
	}
	for {
		c.mu.Lock()
		if c.ok.Load() {
			c.mu.Unlock()
			return nil
		}
		if c.refused != nil && time.Since(c.refusedAt) < recheckRefused {
			err := c.refused
			c.mu.Unlock()
			return s.fail(op, key, err)
		}
		if wait := c.checking; wait != nil {
			c.mu.Unlock()
			select {
			case <-wait:
				continue
			case <-ctx.Done():
				return s.fail(op, key, ctx.Err())
			}
		}
		done := make(chan struct{})
		c.checking = done
		c.mu.Unlock()

		refused, err := s.askScripting(ctx)
		c.mu.Lock()
		c.checking = nil
		switch {
		case err != nil: // no answer: asked again by the next write
		case refused != nil:
			c.refused, c.refusedAt = refused, time.Now()
		default:
			c.refused = nil
			c.ok.Store(true)
		}
		c.mu.Unlock()
		close(done)
		switch {
		case err != nil:
			return s.fail(op, key, err)
		case refused != nil:
			return s.fail(op, key, refused)
		}
		return nil
	}
}

// checkScriptingAlongside starts the check of the first write, unless it
// has passed, beside a call that reads the server first (the client reads
// a server's incarnation before its first vote), so that over FromURL's
// pipelined connection it costs that vote no round trip of its own; the
// returned function waits for it. Its answer is kept for the write
// (checkScripting); the call beside it does not fail by it. Over another
// transport the write checks alone: commands at once take a pool's
// connections at once, and more idle connections than a pooled call
// replaces are then broken by a restart. The caller has entered.
func (s *Server) checkScriptingAlongside(ctx context.Context) (wait func()) {
	if s.scripting.ok.Load() || !s.pipelined() {
		return func() {}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = s.checkScripting(ctx, "check", "", nil) // the write returns it
	}()
	return func() { <-done }
}

// pipelined reports whether the Server's transport is FromURL's
// pipelined connection, where commands sent at once share a round trip.
func (s *Server) pipelined() bool { return s.starter != nil }

// askScripting asks the server whether it runs EVAL, EVALSHA and every
// command of the scripts for this user: a *RefusedError if not, or an
// error when it could not tell. Over a pipelined connection the two
// commands go together, in one round trip.
func (s *Server) askScripting(ctx context.Context) (refused *RefusedError, err error) {
	const why = "a lock's extend and release are scripts, so this server grants nothing (no key was written)"
	evalsha := func() error {
		_, err := s.t.Do(ctx, []string{"EVALSHA", noDigest, "0"}, nil)
		return err
	}
	shaErr := make(chan error, 1)
	if s.pipelined() {
		go func() { shaErr <- evalsha() }()
	}
	reply, err := s.t.Do(ctx, []string{"EVAL", checkSrc(), "0"}, nil)
	var evalshaErr error
	if s.pipelined() {
		evalshaErr = <-shaErr
	} else if err == nil {
		evalshaErr = evalsha()
	}
	if err != nil {
		if r := s.refusedCommand(err, "EVAL"); r != nil {
			r.why = why
			return r, nil
		}
		return nil, err
	}
	if missing := commandsIn(reply); len(missing) > 0 {
		rule := "the ACL rule"
		for _, c := range missing {
			rule += " +" + strings.ToLower(c)
		}
		return &RefusedError{Commands: missing, Rule: rule, why: "the lock scripts call these commands, so this server grants nothing (no key was written)"}, nil
	}
	if evalshaErr == nil || s.noScript(evalshaErr) {
		return nil, nil
	}
	if r := s.refusedCommand(evalshaErr, "EVALSHA"); r != nil {
		r.why = why
		return r, nil
	}
	return nil, evalshaErr
}

// refusedCommand returns the refusal of cmd that err is, with the rule
// that grants it; nil when err is no refusal (a lost connection, a loading
// server).
func (s *Server) refusedCommand(err error, cmd string) *RefusedError {
	msg, ok := s.t.ReplyText(err)
	if !ok {
		return nil
	}
	r := refusalOf(msg, "")
	if r == nil {
		if !s.permanent(err) {
			return nil
		}
		r = &RefusedError{Commands: []string{cmd}, Rule: ruleFor(cmd)}
	}
	r.Commands = []string{cmd}
	if strings.HasPrefix(msg, "NOPERM") {
		r.Rule = ruleFor(cmd)
	} else {
		r.Rule = "enable " + cmd + " on the server (it is renamed, disabled or absent in this engine)"
	}
	r.Err = err
	return r
}

// commandsIn reads the check's reply: the commands it found refused.
func commandsIn(reply any) []string {
	list, _ := reply.([]any)
	var cmds []string
	for _, c := range list {
		if name, ok := c.(string); ok {
			cmds = append(cmds, name)
		}
	}
	return cmds
}
