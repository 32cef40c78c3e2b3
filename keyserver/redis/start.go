package redis

import (
	"context"
	"fmt"
	"sync"

	"github.com/goredlock/goredlock/internal/layout"
	"github.com/goredlock/goredlock/internal/startcall"
	"github.com/goredlock/goredlock/keyserver"
)

// A Server made by FromURL starts a lock's calls on the transport without
// a goroutine of the caller's (see "Started calls on Redis" in docs/design.md).
// The redlock client finds them by startcall.Of, not by a method of the
// Server's: the protocol's types are internal to this module.

func init() { startcall.Register(starterOf) }

// starterOf is the Starter of ks when it is a Server: its start method.
// Every Server has one, which declines the calls its transport cannot
// start (see start).
func starterOf(ks keyserver.KeyServer) startcall.Starter {
	if s, ok := ks.(*Server); ok {
		return startcall.StartFunc(s.start)
	}
	return nil
}

// start starts c (see startcall.Starter) and reports whether it did.
func (s *Server) start(ctx context.Context, c startcall.Call, to startcall.Completion) bool {
	if s.starter == nil { // with WithWait, the commands start with their WAIT (startConfirming)
		return false
	}
	st := startedPool.Get().(*started)
	st.s, st.ctx, st.c, st.to = s, ctx, c, to
	if cmd, keys, args, ok := st.first(); ok && s.enter(ctx, st.op(), c.Key) == nil {
		// The command is the transport's once started: its Close answers
		// it if nothing else does, so it is not counted in flight.
		defer s.inflight.Done()
		if s.starter.StartCommand(cmd, keys, args, c.Deadline, st) {
			return true
		}
	}
	st.put()
	return false
}

// started is a call of Start on its way. They are pooled: one per call
// in flight.
type started struct {
	s    *Server
	ctx  context.Context
	c    startcall.Call
	to   startcall.Completion
	step step
	a    startcall.Answer // an answer whose incarnation is still to be read
	// words holds the words of the first command, which StartCommand
	// copies: kept here, they cost no allocation of their own.
	words [8]string
	// buf holds the words of a set's first command (see firstOfSet); it
	// keeps its room across the pool's uses.
	buf []string
}

// step is the command of a started call whose reply is awaited.
type step uint8

const (
	stepSetNX step = iota // an acquire's SET NX
	stepEval              // Extend's or Release's EVALSHA
	stepSet               // a set's EVALSHA (see firstOfSet)
)

var startedPool = sync.Pool{New: func() any { return new(started) }}

func (st *started) put() {
	*st = started{buf: st.buf[:0]}
	startedPool.Put(st)
}

// first returns the words of st's call's first command, as the blocking
// method sends it, or false not to start it: bad arguments (the blocking method
// reports them), a key watched here (SET NX would be refused), no digest yet.
func (st *started) first() (cmd, keys, args []string, ok bool) {
	s, c, w := st.s, st.c, &st.words
	if !s.scriptingChecked() {
		return st.firstCheck() // the scripting check with the SET NX (scripting.go)
	}
	if len(c.Keys) > 0 {
		return st.firstOfSet()
	}
	switch c.Op {
	case startcall.CallAcquire, startcall.CallAcquireOrHolder, startcall.CallAcquireInLine:
		if keyserver.CheckTTL(c.Key, c.Token, c.TTL) != nil || keyserver.PromiseOf(c.Next) != "" ||
			(c.Op != startcall.CallAcquire && s.sub.contended(c.Key)) {
			return nil, nil, nil, false
		}
		st.step = stepSetNX
		*w = [8]string{"SET", c.Key, c.Token, "NX", "PX", ms(c.TTL)}
		return w[:1:1], w[1:2:2], w[2:6:6], true
	case startcall.CallExtend, startcall.CallRelease:
		if c.Op == startcall.CallExtend && keyserver.CheckTTL(c.Key, c.Token, c.TTL) != nil ||
			c.Op == startcall.CallRelease && keyserver.CheckToken(c.Key, c.Token) != nil {
			return nil, nil, nil, false
		}
		sc := setScript
		if c.Op == startcall.CallRelease {
			sc = releaseScript
		}
		d := s.digests[sc.id].Load()
		if d == nil || *d == "" {
			return nil, nil, nil, false
		}
		st.step = stepEval
		// The words of setWords and releaseWords, written here into st:
		// returned by those, they would cost an allocation per call.
		if c.Op == startcall.CallExtend {
			*w = [8]string{"EVALSHA", *d, "1", c.Key, c.Token, ms(c.TTL), promise(c.Token)}
			return w[:3:3], w[3:4:4], w[4:7:7], true
		}
		*w = [8]string{"EVALSHA", *d, "2", c.Key, layout.LineKey(c.Key), c.Token, claimTTL}
		return w[:3:3], w[3:5:5], w[5:7:7], true
	}
	return nil, nil, nil, false
}

// script is the script of an Extend or a Release, with its keys and
// arguments, as the blocking method sends them: for the source after
// NOSCRIPT, which is rare.
func (st *started) script() (sc *script, keys, args []string) {
	c := st.c
	if len(c.Keys) > 0 {
		return allWords(c.Op == startcall.CallRelease, c.Keys, c.Token, c.TTL)
	}
	if c.Op == startcall.CallRelease {
		keys, args = releaseWords(c.Key, c.Token)
		return releaseScript, keys, args
	}
	keys, args = setWords(c.Key, c.Token, c.TTL)
	return setScript, keys, args
}

// op is the name of st's operation in errors.
func (st *started) op() string {
	switch st.c.Op {
	case startcall.CallExtend:
		return "extend"
	case startcall.CallRelease:
		return "release"
	}
	return "acquire"
}

// Answer takes the reply of st's command on the goroutine that read it, which
// it must not block (see commandStarter): it decodes it, or goes on as the
// blocking method would on a goroutine of its own.
func (st *started) Answer(reply any, err error) {
	s, c := st.s, st.c
	var a startcall.Answer
	switch {
	case st.step == stepSetNX && err == nil && reply == nil: // taken: the script decides
		go st.finishBlocking(st.acquireTaken, true)
		return
	case st.step == stepCheckSet:
		var done bool
		if a, done = st.checkSetAnswer(reply, err); !done {
			return
		}
	case st.step != stepSetNX && err != nil && (s.noScript(err) || s.byDigestRefused(st.scriptOnly(), err)):
		// A restart or SCRIPT FLUSH (NOSCRIPT), or EVALSHA refused: the source.
		go st.finishBlocking(st.evalSource, true)
		return
	case st.step == stepSet && err == nil && st.inLineRefused(reply): // a set to put in line
		go st.finishBlocking(st.setInLineTaken, true)
		return
	case err != nil && st.step == stepSet:
		a.Err = crossSlot(s.fail(st.op(), c.Key, err))
	case err != nil:
		a.Err = s.fail(st.op(), c.Key, err)
	case st.step == stepSetNX && reply != "OK":
		a.Err = s.fail("acquire", c.Key, fmt.Errorf("unexpected reply %T to SET NX", reply))
	case st.step == stepSetNX:
		a.OK = true
	case st.step == stepSet:
		a = st.setAnswer(reply)
	default:
		var n int64
		n, a.Err = s.integer(st.op(), c.Key, reply)
		a.OK = n == 1
	}
	if c.Incarnation && a.Err == nil {
		in, known := s.knownIncarnation()
		if !known { // read it, as Incarnation would
			st.a = a
			go st.finishBlocking(st.answered, false)
			return
		}
		a.Incarnation = in
	}
	st.complete(a)
}

// finishBlocking runs rest, the remainder of st's call, by its deadline,
// reads the incarnation if asked, and completes st; when rest sends commands
// about the key, it first asks the caller whether to go on (Completion).
func (st *started) finishBlocking(rest func(ctx context.Context) startcall.Answer, sends bool) {
	if sends && !st.to.Continue() {
		st.put()
		return
	}
	ctx, cancel := context.WithDeadline(st.ctx, st.c.Deadline)
	defer cancel()
	a := rest(ctx)
	if st.c.Incarnation && a.Err == nil {
		a.Incarnation, a.IncarnationErr = st.s.Incarnation(ctx)
	}
	st.complete(a)
}

// complete hands a to st's Completion and recycles st.
func (st *started) complete(a startcall.Answer) {
	to := st.to
	st.put()
	to.Complete(a)
}

// answered is the rest of a call that has its answer, st.a.
func (st *started) answered(context.Context) startcall.Answer { return st.a }

// acquireTaken is the rest of an acquire whose SET NX was refused.
func (st *started) acquireTaken(ctx context.Context) (a startcall.Answer) {
	s, c := st.s, st.c
	switch {
	case c.Op == startcall.CallAcquire:
		a.OK, a.Err = s.acquireTaken(ctx, c.Key, c.Token, c.TTL)
	case c.Op == startcall.CallAcquireInLine && keyserver.PromiseOf(c.Token) != "":
		a.OK, a.Holder, a.Err = s.acquireInLineTaken(ctx, c.Key, c.Token, c.TTL, c.Next)
	default: // AcquireInLine with nobody to put in line is AcquireOrHolder
		a.OK, a.Holder, a.Err = s.acquireOrHolderTaken(ctx, c.Key, c.Token, c.TTL)
	}
	return a
}

// evalSource is the rest of an Extend or a Release that the server
// answered NOSCRIPT: the script by its source.
func (st *started) evalSource(ctx context.Context) (a startcall.Answer) {
	s, c := st.s, st.c
	op := st.op()
	if a.Err = s.enter(ctx, op, c.Key); a.Err != nil {
		return a
	}
	defer s.inflight.Done()
	sc, keys, args := st.script()
	reply, err := s.evalSource(ctx, op, sc, false, keys, args...)
	if a.Err = err; a.Err == nil && st.step == stepSet && st.inLineRefused(reply) {
		return st.setInLineTaken(ctx)
	} else if a.Err == nil && st.step == stepSet {
		a = st.setAnswer(reply)
	} else if a.Err == nil {
		var n int64
		n, a.Err = s.integer(op, c.Key, reply)
		a.OK = n == 1
	}
	return a
}
