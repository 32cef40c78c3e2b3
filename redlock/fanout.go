package redlock

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/goredlock/goredlock/keyserver"
)

// opKind names the KeyServer method a fan-out calls; its String is the
// name logs, errors and hooks use.
type opKind uint8

const (
	opAcquire       opKind = iota // Notifiers are asked with AcquireOrHolder
	opAcquireInLine               // Notifiers are asked with AcquireInLine
	opAcquireFenced
	opExtend
	opRelease
	opGiveBack // a waiter's undo of a failed attempt: Notifiers are asked with ReleaseInLine, HoldKeepers with an InLine ReleaseHold
	opRaiseFence
	opReadFence // RaiseFence to 0, which reads the counter (see CheckFence)
	opLeaveLine // Notifiers only; other servers vote for without a call
	opIdentify  // keyserver.Incarnator's Incarnation, for its ID (see identities)
	opRead      // a read of what the servers hold (see fan.read)
)

var opNames = [...]string{
	opAcquire:       "acquire",
	opAcquireInLine: "acquire",
	opAcquireFenced: "acquire",
	opExtend:        "extend",
	opRelease:       "release",
	opGiveBack:      "release",
	opRaiseFence:    "raise_fence",
	opReadFence:     "read_fence",
	opLeaveLine:     "leave_line",
	opIdentify:      "identify",
	opRead:          "read",
}

func (k opKind) String() string { return opNames[k] }

// fan is one operation to send to every server: data rather than
// closures, so that a fan-out on in-process servers allocates nothing.
type fan struct {
	op         opKind
	rule       rule   // when the votes settle the outcome
	name       string // the lock's name, for logs
	key, token string
	// ttl is what acquire and extend ask the servers for: the hold's TTL
	// plus a lock's lock-delay (options.keyTTL). Validity counts the hold's
	// TTL alone; the quarantine judges a grant by this one.
	ttl     time.Duration
	fence   uint64        // raise_fence
	timeout time.Duration // bound on each server's call
	// final marks a lock's release (also one that only cuts the TTL to a
	// minimum hold): its calls go all the way even when overtaken.
	final bool
	// undo releases the token after each server's call when the fan-out
	// fails, unless it stored nothing ("Quorum and validity", step 5).
	undo bool
	// after holds the lock's earlier calls, per server, that this call lands
	// after (or overtakes where the server keeps order: serverCall.overtake).
	after tails
	// only, if not zero, has the bits of the servers to call, less those
	// where unlessGranted (a call it follows) granted; the rest vote for.
	only          uint64
	unlessGranted *background
	// next is a token of the call of this client that waits behind this
	// one, for AcquireInLine to put in line too (see keyserver.Notifier).
	next string
	// kind makes the calls of a hold; read, if set, those of an opRead.
	kind holdKind
	read reader
	// quarantine judges grants of restarted servers (incarnation.go).
	quarantine quarantineRule
}

// asks reports whether f's call goes to server i (see only).
func (f *fan) asks(i int) bool { return f.only == 0 || f.only&bit(i) != 0 }

// givesBack reports whether the undo of f's grants keeps the caller's
// place in line (opGiveBack); a set's undo frees its keys ("The life of a
// wait on one server" in docs/design.md).
func (f *fan) givesBack() bool {
	return f.kind.traits().oneLine && f.op == opAcquireInLine
}

// cleansUp reports whether f cleans up after the lock's earlier calls
// rather than asking for a vote that grants anything.
func (f *fan) cleansUp() bool {
	return f.op == opRelease || f.op == opGiveBack || f.op == opLeaveLine || f.final
}

// heldBack returns why f's call to server i is not made, its breaker being
// open, or nil: a clean-up after an earlier call of the lock made to the
// server, which may have stored something there, goes and takes no probe.
func (c *Client) heldBack(f *fan, i int) error {
	if f.cleansUp() && f.after.made&bit(i) != 0 {
		return nil
	}
	return c.health.breakers[i].allow(c.clock)
}

// vote is one server's answer.
type vote struct {
	server int
	ok     bool
	n      uint64
	holder keyserver.Holder
	err    error
}

// fanned is the result of a fan-out: the votes when the outcome was
// decided, and what the caller still has to do with the calls.
type fanned struct {
	tally
	// tails are the calls for the lock's next call to follow: done is nil
	// when all have finished, and made counts this fan-out's calls too.
	tails
	bg *background // the calls still running; nil when there are none
}

// tails are the calls of one fan-out that a lock's next call to each
// server follows; of is their fan-out, for overtaking. made has the bits of
// the servers the lock's calls were made to: the others hold nothing of it.
type tails struct {
	done []<-chan struct{}
	of   *background
	made uint64
}

// fanOut sends f's call to every server and returns once the votes settle
// the outcome under f.rule; the rest finish in the background. The caller
// must settle once, with the final verdict: a won vote may lack validity.
func (c *Client) fanOut(ctx context.Context, f fan) fanned {
	if c.inProcess || len(c.servers) == 1 {
		return c.fanOutInTurn(ctx, &f)
	}
	return c.fanOutConcurrent(ctx, f)
}

// fanOutInTurn calls the servers one after another on the caller's
// goroutine ("Started calls" in docs/design.md): in-process ones need no
// deadline or breaker; a single server's earlier calls of the lock were
// made the same way, so they have finished.
func (c *Client) fanOutInTurn(ctx context.Context, f *fan) (r fanned) {
	r.n, r.made = len(c.servers), f.after.made
	for i := range c.servers {
		v := vote{server: i}
		if c.inProcess {
			r.made |= bit(i)
			v.ok, v.n, v.holder, v.err = c.call(ctx, f, i)
		} else if v.err = c.heldBack(f, i); v.err == nil {
			r.made |= bit(i)
			callCtx, cancel := c.clock.WithTimeout(ctx, f.timeout)
			v.ok, v.n, v.holder, v.err = c.call(callCtx, f, i)
			cancel()
		}
		c.heard(ctx, f, i, v.err)
		r.add(v)
	}
	return r
}

// fanOutConcurrent makes every server's call at once, but those skip
// counts; the caller wakes once, when the votes decide.
func (c *Client) fanOutConcurrent(ctx context.Context, f fan) fanned {
	n := len(c.servers)
	bg := &background{c: c, f: f, ctx: ctx, servers: make([]serverCall, n), voted: make(chan struct{})}
	bg.votes.n = n
	calls, made := c.skip(ctx, bg)
	c.bg.Add(calls)
	startable := c.starters != nil && calls > 0 && f.startable()
	var deadline time.Time
	if startable {
		// The timer is armed first, and counts every call as waiting:
		// the calls started first may answer before the last one starts.
		deadline = c.clock.Now().Add(f.timeout)
		bg.waiting = calls
		bg.timer = c.clock.AfterFunc(f.timeout, func() { bg.expire(context.DeadlineExceeded) })
	}
	started := 0
	for i := range bg.servers {
		switch s := &bg.servers[i]; {
		case s.phase == callSkipped:
		case startable && c.startCall(bg, i, deadline):
			started++
		default:
			if bg.callCtx == nil {
				bg.callCtx, bg.cancel = c.clock.WithTimeout(ctx, f.timeout)
				bg.blocking.Store(1) // until all are made
			}
			bg.blocking.Add(1)
			go s.block()
		}
	}
	if bg.callCtx != nil && bg.blocking.Add(-1) == 0 {
		bg.cancel()
	}
	if startable {
		bg.mu.Lock()
		if bg.waiting -= calls - started; bg.waiting == 0 {
			bg.timer.Stop()
		}
		bg.mu.Unlock()
	}
	if started > 0 && ctx.Done() != nil {
		select { // ctx's end expires the started calls; the deadline is bg.timer's
		case <-bg.voted:
		case <-ctx.Done():
			bg.expire(ctx.Err())
		}
	}
	<-bg.voted
	bg.mu.Lock()
	r := fanned{tally: bg.votes, bg: bg, tails: tails{made: made}}
	bg.mu.Unlock()
	return r
}

// skip counts at once the votes of the servers bg does not call: those
// f calls not at all, and those whose breaker is open. It returns how many
// calls are to be made, and the servers the lock's calls were made to.
func (c *Client) skip(ctx context.Context, bg *background) (calls int, made uint64) {
	f := &bg.f
	calls, made = len(c.servers), f.after.made
	for i := range c.servers {
		s := &bg.servers[i]
		s.bg, s.i = bg, i
		v := vote{server: i, ok: true} // as fan.call answers for a server not in f.only
		if f.undo || f.asks(i) {
			if v.err = c.heldBack(f, i); v.err == nil {
				made |= bit(i)
				continue
			}
			// Not called: it stored nothing, and there is nothing to undo.
			v.ok = false
			c.observe(ctx, f.op, f.name, i, f.timeout, v.err)
		}
		calls--
		s.ok, s.phase = v.ok, callSkipped
		s.state.Store(callFinished)
		bg.mu.Lock()
		bg.countLocked(v)
		bg.mu.Unlock()
	}
	return calls, made
}

// settle gives a fan-out its final verdict. A failed one's grants before
// the verdict are undone before settle returns; the others in the
// background, each after its own call ("Quorum and validity", step 5).
func (c *Client) settle(ctx context.Context, f *fan, r *fanned, failed bool) {
	bg := r.bg
	if bg == nil { // every call has finished
		if failed && f.undo {
			for i := range c.servers {
				if !f.storedNothing(r.answerOf(i)) {
					c.undo(ctx, f, i)
				}
			}
		}
		return
	}
	if r.done = bg.settle(failed); r.done != nil {
		r.of = bg
	}
	if f.undo && failed && r.done != nil {
		for i := range bg.servers {
			if bg.servers[i].granted {
				<-r.done[i]
			}
		}
	}
}

// storedNothing reports whether an answer shows that f's call stored
// nothing to undo ("Quorum and validity", step 5, in docs/design.md).
func (f *fan) storedNothing(ok bool, err error) bool {
	if err != nil { // unless the call was not made
		return errors.Is(err, errServerDown) || errors.Is(err, errNotSent)
	}
	return !ok
}

// undo cleans up after a failed attempt on server i, even once ctx ended:
// a key left behind would block everyone until its TTL ran out.
func (c *Client) undo(ctx context.Context, f *fan, i int) {
	uctx := ctx
	if ctx.Done() != nil {
		uctx = context.WithoutCancel(ctx)
	}
	if !c.inProcess {
		var cancel context.CancelFunc
		uctx, cancel = c.clock.WithTimeout(uctx, f.timeout)
		defer cancel()
	}
	u := fan{op: opRelease, key: f.key, token: f.token, kind: f.kind}
	if f.givesBack() || f.op == opAcquire && !f.kind.traits().turns {
		u.op = opGiveBack // a primitive's waiter keeps its place too (keyserver.HoldSpec.InLine)
	}
	_, _, _, err := u.call(uctx, i, c.servers[i])
	c.observe(ctx, opRelease, f.name, i, f.timeout, err) // the clean-up of a failed attempt
}

// background sends f to every server without cancellation and waits for
// a quorum of answers at most. Its context is not cancelled on return: that
// would end the calls still waiting for the ones they follow.
func (c *Client) background(ctx context.Context, f fan) {
	if c.enter() != nil {
		return
	}
	defer c.exit()
	if ctx.Done() != nil {
		ctx = context.WithoutCancel(ctx)
	}
	res := c.fanOut(ctx, f)
	c.settle(ctx, &f, &res, false)
}

// read sends the read f to every server and returns its votes once every
// call has settled; two servers found to be one store fail it, as no
// answer counts then (Inspect, CheckFence, an election's leader).
func (c *Client) read(ctx context.Context, f fan) (tally, error) {
	res := c.fanOut(ctx, f)
	c.settle(ctx, &f, &res, false)
	if err := c.identities.failed(); err != nil {
		return tally{}, err
	}
	return res.tally, nil
}

// reader makes a read's call to server i.
type reader interface {
	call(ctx context.Context, f fan, i int, ks keyserver.KeyServer) (bool, uint64, keyserver.Holder, error)
}

// answers keeps what a read's call returned, by server, for the reader to
// count once the read has settled (under mu: a late call may still land).
type answers[T any] struct {
	mu   sync.Mutex
	got  []T
	read func(ctx context.Context, i int, ks keyserver.KeyServer) (T, error)
}

func newAnswers[T any](n int, read func(ctx context.Context, i int, ks keyserver.KeyServer) (T, error)) *answers[T] {
	return &answers[T]{got: make([]T, n), read: read}
}

func (r *answers[T]) call(ctx context.Context, _ fan, i int, ks keyserver.KeyServer) (bool, uint64, keyserver.Holder, error) {
	v, err := r.read(ctx, i, ks)
	if err != nil {
		return false, 0, keyserver.Holder{}, err
	}
	r.mu.Lock()
	r.got[i] = v
	r.mu.Unlock()
	return true, 0, keyserver.Holder{}, nil
}

// call makes f's call to server i once the server's identity is known
// (see identities): the call's own wait, bounded like the call.
func (c *Client) call(ctx context.Context, f *fan, i int) (ok bool, n uint64, h keyserver.Holder, err error) {
	if f.asks(i) && !f.cleansUp() {
		if err := c.identify(ctx, i, f); err != nil {
			return false, 0, h, err
		}
	}
	return f.call(ctx, i, c.servers[i])
}

// identify learns server i's identity, within ctx, before its vote of f
// counts ("One store counts once" in docs/design.md).
func (c *Client) identify(ctx context.Context, i int, f *fan) error {
	id := &c.identities
	for !id.known[i].Load() {
		id.mu.Lock()
		if err := id.failed(); err != nil {
			id.mu.Unlock()
			return err
		}
		if id.known[i].Load() {
			id.mu.Unlock()
			return nil
		}
		if ask := id.asks[i]; ask != nil {
			id.mu.Unlock()
			select {
			case <-ask:
				continue
			case <-ctx.Done():
				return fmt.Errorf("identify: %w", ctx.Err())
			}
		}
		ask := make(chan struct{})
		id.asks[i] = ask
		id.mu.Unlock()
		// One ask serves the quarantine too, which judges every server
		// asked (see identities.init).
		in, err := c.quarantine.judged[i].Incarnation(ctx)
		c.observe(ctx, opIdentify, f.name, i, 0, err)
		if err == nil {
			// A kept reading may be older than this call: it was current
			// when that incarnation came back, no later.
			c.quarantine.sight(i, in, c.quarantine.clock.Now().Add(-in.Up))
		}
		id.mu.Lock()
		id.asks[i] = nil
		close(ask)
		if err == nil {
			err = id.recordLocked(c.servers, i, in.ID)
		}
		id.mu.Unlock()
		if err != nil {
			return err
		}
	}
	return nil
}

// call makes f's call to ks: its vote, with the number it read (a fence
// counter) or 0, and the holder a refusal described, if any.
func (f *fan) call(ctx context.Context, i int, ks keyserver.KeyServer) (ok bool, n uint64, h keyserver.Holder, err error) {
	if !f.asks(i) {
		return true, 0, h, nil
	}
	if f.read != nil {
		ok, n, h, err = f.read.call(ctx, *f, i, ks)
	} else {
		ok, n, h, err = f.kind.call(ctx, *f, i, ks)
	}
	if q := f.quarantine.q; q != nil && q.judged[i] != nil && (ok || err == nil) {
		ok, err = f.judge(ctx, i, ok, err)
	}
	return ok, n, h, err
}

// judge judges server i's answer (ok, err) by its incarnation, read now.
// Apart from call, so that the server's call runs on a smaller stack:
// a blocking call's goroutine would otherwise grow its stack.
//
//go:noinline
func (f *fan) judge(ctx context.Context, i int, ok bool, err error) (bool, error) {
	in, inErr := f.quarantine.q.judged[i].Incarnation(ctx)
	return f.quarantine.answer(i, f.ttl, ok, err, in, inErr)
}

// heard observes server i's answer to f, unless f voted for it without
// a call (see fan.only): that says nothing of the server.
func (c *Client) heard(ctx context.Context, f *fan, i int, err error) {
	if err != nil || f.asks(i) {
		c.observe(ctx, f.op, f.name, i, f.timeout, err)
	}
}

// health counts each server's consecutive failures, so that the log says
// once when a server starts failing and once when it recovers.
type health struct {
	failures []atomic.Int64 // per server; 0 while it answers
	breakers []breaker      // per server
	// answeredAt is when each server last answered (UnixNano, client's
	// clock): a call that timed out went unanswered since then at most.
	answeredAt []atomic.Int64
}

// newHealth is the health of n servers, none failing.
func newHealth(n int) health {
	return health{failures: make([]atomic.Int64, n), breakers: make([]breaker, n), answeredAt: make([]atomic.Int64, n)}
}

// observe records a server call's outcome for the breaker, the log and
// the ServerFailed hook ("Failed servers" in docs/design.md). A call that
// timed out before ctx ended counts the server silent for timeout, or
// since it last answered if that is sooner.
func (c *Client) observe(ctx context.Context, op opKind, name string, server int, timeout time.Duration, err error) {
	n := &c.health.failures[server]
	b := &c.health.breakers[server]
	if err == nil {
		// answeredAt is written at most once a millisecond, as every answer
		// of every call passes here.
		at := &c.health.answeredAt[server]
		if t := c.clock.Now().UnixNano(); t-at.Load() >= int64(time.Millisecond) {
			at.Store(t)
		}
		b.answered()
		if n.Load() != 0 {
			if was := n.Swap(0); was > 0 {
				c.logger.Info("redlock: key server recovered", "server", server, "failures", was)
			}
		}
		return
	}
	if h := c.hooks.ServerFailed; h != nil {
		h(ctx, op.String(), name, server, err)
	}
	if errors.Is(err, errServerDown) || errors.Is(err, errNotSent) { // not called: the calls that were count
		return
	}
	if errors.Is(err, context.Canceled) {
		b.cancelled()
		c.logger.Debug("redlock: key server call cancelled", "op", op, "lock", name, "server", server)
		return
	}
	if errors.Is(err, keyserver.ErrPermitsDiffer) { // the caller's count, not the server's health
		c.logger.Debug("redlock: semaphore held with another permit count", "op", op, "lock", name, "server", server, "error", err)
		return
	}
	if errors.Is(err, ErrQuarantined) { // it answers: no failure to count
		c.logger.Debug("redlock: grant of a quarantined key server not counted", "op", op, "lock", name, "server", server, "error", err)
		return
	}
	failures := n.Add(1)
	if !errors.Is(err, keyserver.ErrPermanent) {
		var silent time.Duration
		if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
			now := c.clock.Now()
			silent = max(min(timeout, now.Sub(time.Unix(0, c.health.answeredAt[server].Load()))), 0)
		}
		b.failed(c.clock, failures, err, silent)
	}
	if failures == 1 {
		c.logger.Warn("redlock: key server failing", "op", op, "lock", name, "server", server, "error", err)
		return
	}
	c.logger.Debug("redlock: key server failed", "op", op, "lock", name, "server", server, "error", err)
}

// logVotes reports a lost vote at debug level; fanOut has already logged
// each server failure.
func (c *Client) logVotes(op opKind, name string, t tally) {
	if !t.won() {
		c.logger.Debug("redlock: quorum not reached", "op", op, "lock", name,
			"granted", t.granted, "refused", t.refused, "servers", t.n)
	}
}
