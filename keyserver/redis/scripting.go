package redis

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/goredlock/goredlock/internal/layout"
	"github.com/goredlock/goredlock/internal/startcall"
	"github.com/goredlock/goredlock/keyserver"
)

// No grant the client cannot undo (rule 15): a lock's extend and release
// are scripts, so a server that cannot run them must grant nothing, where
// a plain SET NX would succeed and leave a key nobody can release before
// its TTL. A Server's first write (its first SET NX or granting script)
// makes sure, once, that the server runs EVAL for this user, and that the
// user may run every command the scripts call (Redis 7.0 and later tell it
// to a script: redis.acl_check_cmd); the first SET NX does it in the same
// script (checkSetSrc), started or not, so it costs no round trip of its
// own. A refusal names what is missing (a *RefusedError,
// keyserver.ErrPermanent) and is returned by every write, without asking
// again, for recheckRefused. EVALSHA is not needed: where it is refused,
// each script is sent by its source (see byDigestRefused).

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

// checkBody is the check's loop, which leaves the commands refused in the
// table missing.
func checkBody(cmds []string) string {
	var b strings.Builder
	b.WriteString("local K = '" + layout.IncarnationKey + "'\nlocal missing = {}\nif redis.acl_check_cmd then\n\tfor _, c in ipairs({")
	for i, c := range cmds {
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
end`)
	return b.String()
}

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

// The check's commands and scripts, made once when the package starts
// (init runs after every script is registered), not within a first
// call's deadline.
var (
	// scriptCommands is every command the scripts call with redis.call,
	// read from their sources; the PUBLISH they call in pcall is left
	// out, as a user denied it still locks (its waiters poll).
	scriptCommands []string
	// checkSrc is the check's script: of scriptCommands, those the user
	// may not run (one the server lacks counts), none where the server
	// cannot tell (before Redis 7.0). Each is checked with whole
	// arguments on the store's marker, a key the user must reach anyway:
	// Redis 7.0 reads past the arguments of a command checked without
	// them for a user limited to some keys (wrong answers, and a crash
	// seen). The commands are written in the source: as arguments they
	// would pass the transports' bound on a command's words.
	checkSrc string
	// checkSetSrc is the check and a lock's SET NX in one script, for a
	// Server's first SET NX: KEYS[1] the lock key, ARGV[1] the token,
	// ARGV[2] the TTL in milliseconds. Reply: {0, the commands
	// refused...} with nothing written, {1} when it stored the token, {2}
	// when the key exists.
	checkSetSrc string
)

func init() {
	scriptCommands = commandsCalled()
	checkSrc = checkBody(scriptCommands) + "\nreturn missing"
	checkSetSrc = checkBody(scriptCommands) + `
if #missing > 0 then
	table.insert(missing, 1, 0)
	return missing
end
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
	return {1}
end
return {2}`
}

// commandsCalled reads the commands the scripts call with redis.call
// ('NAME' in capitals), sorted.
func commandsCalled() []string {
	const call = "redis.call('"
	seen := map[string]bool{}
	for _, sc := range scripts {
		for rest := sc.src; ; {
			i := strings.Index(rest, call)
			if i < 0 {
				break
			}
			rest = rest[i+len(call):]
			if name, _, ok := strings.Cut(rest, "'"); ok && name != "" && strings.ToUpper(name) == name {
				seen[name] = true
			}
		}
	}
	cmds := make([]string, 0, len(seen))
	for c := range seen {
		cmds = append(cmds, c)
	}
	sort.Strings(cmds)
	return cmds
}

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
	if s.scripting.ok.Load() || sc != nil && !sc.grants {
		return nil
	}
	_, err := s.runCheck(ctx, op, key, func() (bool, *RefusedError, error) {
		refused, err := s.askScripting(ctx)
		return false, refused, err
	})
	return err
}

// firstSetNX is a Server's SET NX while the check has not passed: the
// check and the SET NX in one script (checkSetSrc), so that the first
// write costs no round trip more than a SET NX, also while another check
// runs (each such script checks for itself); false for handled where a
// refusal is kept, which the caller's check returns. The caller has
// entered.
func (s *Server) firstSetNX(ctx context.Context, key, token string, ttl time.Duration) (set, handled bool, err error) {
	if s.scripting.refusalKept() {
		return false, false, nil
	}
	set, refused, err := s.checkAndSet(ctx, key, token, ttl)
	s.scripting.settle(refused, err)
	switch {
	case err != nil:
		return false, true, s.fail("acquire", key, err)
	case refused != nil:
		return false, true, s.fail("acquire", key, refused)
	}
	return set, true, nil
}

// refusalKept reports whether a refusal found less than recheckRefused
// ago stands.
func (c *scriptCheck) refusalKept() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.refusalKeptLocked()
}

// refusalKeptLocked is refusalKept with c.mu held.
func (c *scriptCheck) refusalKeptLocked() bool {
	return c.refused != nil && time.Since(c.refusedAt) < recheckRefused
}

// runCheck runs check, the scripting check and what a write does with
// it, unless it has passed (nil) or a refusal is kept (the refusal); one
// at a time, which the others wait for. check's refusal is kept, its
// error is not (the next write asks again).
func (s *Server) runCheck(ctx context.Context, op, key string, check func() (bool, *RefusedError, error)) (bool, error) {
	c := &s.scripting
	for {
		c.mu.Lock()
		switch {
		case c.ok.Load():
			c.mu.Unlock()
			return false, nil
		case c.refusalKeptLocked():
			err := c.refused
			c.mu.Unlock()
			return false, s.fail(op, key, err)
		}
		if running := c.checking; running != nil {
			c.mu.Unlock()
			select {
			case <-running:
				continue
			case <-ctx.Done():
				return false, s.fail(op, key, ctx.Err())
			}
		}
		done := make(chan struct{})
		c.checking = done
		c.mu.Unlock()

		result, refused, err := check()
		c.mu.Lock()
		c.checking = nil
		c.mu.Unlock()
		c.settle(refused, err)
		close(done)
		switch {
		case err != nil:
			return false, s.fail(op, key, err)
		case refused != nil:
			return false, s.fail(op, key, refused)
		}
		return result, nil
	}
}

// checkAndSet runs checkSetSrc on key: whether it stored token, or the
// refusal; nothing is stored where the check finds one.
func (s *Server) checkAndSet(ctx context.Context, key, token string, ttl time.Duration) (set bool, refused *RefusedError, err error) {
	reply, err := s.t.Do(ctx, []string{"EVAL", checkSetSrc, "1"}, []string{key}, token, ms(ttl))
	return s.checkSetVerdict(key, reply, err)
}

// checkSetVerdict reads the answer to checkSetSrc on key (reply, err):
// whether it stored the token, or the refusal, or an error that is none
// (not kept: the next write checks again).
func (s *Server) checkSetVerdict(key string, reply any, err error) (set bool, refused *RefusedError, _ error) {
	if err != nil {
		if msg, ok := s.t.ReplyText(err); ok {
			if r := refusalOf(msg, key); r != nil && len(r.Commands) == 0 && strings.Contains(msg, "key") {
				return false, nil, err // the key's, not the scripts': SET NX would be refused too
			}
		}
		if r := s.refusedCommand(err, "EVAL"); r != nil {
			return false, r, nil
		}
		return false, nil, err
	}
	list, _ := reply.([]any)
	var verdict int64 = -1
	if len(list) > 0 {
		verdict, _ = list[0].(int64)
	}
	switch verdict {
	case 0:
		return false, missingRefusal(commandsIn(list[1:])), nil
	case 1, 2:
		return verdict == 1, nil, nil
	}
	return false, nil, fmt.Errorf("unexpected reply %v to the scripting check", reply)
}

// settle keeps what a check found: passed (refused and err nil), a
// refusal, or nothing for an error (the next write checks again).
func (c *scriptCheck) settle(refused *RefusedError, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case err != nil:
	case refused != nil:
		c.refused, c.refusedAt = refused, time.Now()
	default:
		c.refused = nil
		c.ok.Store(true)
	}
}

// byDigestRefused reports whether err is the server's refusal of EVALSHA
// (an ACL, a renamed command) for sc, and then has sc sent by its source
// from now on, as where SCRIPT LOAD is refused.
func (s *Server) byDigestRefused(sc *script, err error) bool {
	msg, ok := s.t.ReplyText(err)
	if !ok || !(strings.HasPrefix(msg, "NOPERM") || strings.Contains(msg, "unknown command")) {
		return false
	}
	s.digests[sc.id].Store(new(string))
	return true
}

// missingRefusal is the refusal of the commands the check found refused.
func missingRefusal(missing []string) *RefusedError {
	rule := "the ACL rule"
	for _, c := range missing {
		rule += " +" + strings.ToLower(c)
	}
	return &RefusedError{Commands: missing, Rule: rule, why: "the lock scripts call these commands, so this server grants nothing (no key was written)"}
}

// startScriptingCheck starts the check of the first write, unless it has
// passed or runs, when a call reads the server before any write (the
// client reads a server's incarnation before its first vote): sent with
// that call's first command, it is answered before the write needs it, so
// that over FromURL's pipelined connection it costs the vote no round trip
// of its own. It runs by ctx's deadline, not its cancellation (the caller
// does not wait for it), and Close waits for it. Its answer is kept for
// the write (checkScripting). Over another transport the write checks
// alone: commands at once take a pool's connections at once, and more idle
// connections than a pooled call replaces are then broken by a restart.
func (s *Server) startScriptingCheck(ctx context.Context) {
	c := &s.scripting
	if c.ok.Load() || !s.pipelined() {
		return
	}
	c.mu.Lock()
	busy := c.checking != nil || c.refusalKeptLocked()
	c.mu.Unlock()
	if busy {
		return
	}
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(5 * time.Second)
	}
	cctx, cancel := context.WithDeadline(context.WithoutCancel(ctx), deadline)
	if s.enter(cctx, "check", "") != nil {
		cancel()
		return
	}
	go func() {
		defer cancel()
		defer s.inflight.Done()
		_ = s.checkScripting(cctx, "check", "", nil) // the write returns it
	}()
}

// pipelined reports whether the Server's transport is FromURL's
// pipelined connection, where commands sent at once share a round trip.
func (s *Server) pipelined() bool { return s.starter != nil }

// askScripting asks the server whether it runs EVAL and every command of
// the scripts for this user: a *RefusedError if not, or an error when it
// could not tell.
func (s *Server) askScripting(ctx context.Context) (refused *RefusedError, err error) {
	reply, err := s.t.Do(ctx, []string{"EVAL", checkSrc, "0"}, nil)
	if err != nil {
		if r := s.refusedCommand(err, "EVAL"); r != nil {
			return r, nil
		}
		return nil, err
	}
	if missing := commandsIn(reply); len(missing) > 0 {
		return missingRefusal(missing), nil
	}
	return nil, nil
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
	r.why = "a lock's extend and release are scripts, so this server grants nothing (no key was written)"
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

// stepCheckSet is the step of a started acquire's scripting check and SET
// NX (see firstCheck), apart from start.go's steps.
const stepCheckSet step = 100

// firstCheck is first for a Server whose check has not passed: an
// acquire of one key starts as checkSetSrc (stepCheckSet), which checks
// and sets at once; any other call, or one while a refusal is kept, is
// left to the blocking method, which checks first.
func (st *started) firstCheck() (cmd, keys, args []string, ok bool) {
	s, c, w := st.s, st.c, &st.words
	switch c.Op {
	case startcall.CallAcquire, startcall.CallAcquireOrHolder, startcall.CallAcquireInLine:
	default:
		return nil, nil, nil, false
	}
	if len(c.Keys) > 0 || keyserver.CheckTTL(c.Key, c.Token, c.TTL) != nil || keyserver.PromiseOf(c.Next) != "" ||
		(c.Op != startcall.CallAcquire && s.sub.contended(c.Key)) {
		return nil, nil, nil, false
	}
	if s.scripting.refusalKept() {
		return nil, nil, nil, false
	}
	st.step = stepCheckSet
	*w = [8]string{"EVAL", checkSetSrc, "1", c.Key, c.Token, ms(c.TTL)}
	return w[:3:3], w[3:4:4], w[4:6:6], true
}

// checkSetAnswer is Answer for stepCheckSet, on the reader's goroutine:
// it keeps what the check found, and returns the call's answer, or false
// when the key was taken and the call goes on as after a refused SET NX.
func (st *started) checkSetAnswer(reply any, err error) (a startcall.Answer, done bool) {
	s, c := st.s, st.c
	set, refused, err := s.checkSetVerdict(c.Key, reply, err)
	s.scripting.settle(refused, err)
	switch {
	case err != nil:
		a.Err = s.fail("acquire", c.Key, err)
	case refused != nil:
		a.Err = s.fail("acquire", c.Key, refused)
	case !set:
		go st.finishBlocking(st.acquireTaken, true)
		return a, false
	default:
		a.OK = true
	}
	return a, true
}

// scriptOnly is the script of st's Extend, Release or set call.
func (st *started) scriptOnly() *script {
	sc, _, _ := st.script()
	return sc
}
