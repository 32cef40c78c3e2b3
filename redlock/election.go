package redlock

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/goredlock/goredlock/internal/layout"
	"github.com/goredlock/goredlock/keyserver"
)

// ErrNoLeader is Election.Leader's error when no holder leads on a quorum
// of servers: nobody campaigned, the leader resigned or was lost, or the
// servers disagree.
var ErrNoLeader = errors.New("redlock: no leader")

// Election is one leader of a name at a time, which everyone can see:
// campaigners wait until they lead, and the leader's value (an address, a
// host name) is what Leader and Observe report while it leads. Get one
// with Client.Election; it is safe for concurrent use.
type Election struct {
	c    *Client
	name string
	err  error
}

// Election returns the election called name. Every server must implement
// keyserver.HoldKeeper and keyserver.Fencer (a leader's term is a fencing
// token); an empty name, or a server that does not, makes every method
// fail with ErrInvalidArgument before any server is asked (Observe's
// channel is then closed at once). Campaign waits without a retry limit,
// also while the servers fail, saying nothing of them unless the client
// has a logger (WithLogger); bound it (see Campaign).
func (c *Client) Election(name string) *Election {
	e := &Election{c: c, name: name}
	if name == "" {
		e.err = invalidArgument("empty election name")
	} else {
		e.err = checkServers(c.servers, "an election", "HoldKeeper and keyserver.Fencer", func(ks keyserver.KeyServer) bool {
			return implements[keyserver.Fencer](ks) && implements[keyserver.HoldKeeper](ks)
		})
	}
	return e
}

// Campaign waits until this caller leads, with value (not empty) as what
// Leader and Observe report; by default without a retry limit
// (WithRetryCount(-1)), also while servers fail: it tries at the retry
// delay until ctx ends, then returns a *QuorumError with their failures,
// and only a logger (WithLogger) tells of them meanwhile. Once it leads,
// the leadership is kept alive in the background until it is released
// (Release on the returned *Lock resigns), lost (Done closes), or ctx ends
// or the client closes, which resign. So ctx bounds the leadership, not
// only the wait: bound the wait alone with WithRetryCount(n) ("Elections"
// in docs/design.md). The leadership's Fence is its term, greater than
// every earlier leader's.
func (e *Election) Campaign(ctx context.Context, ttl time.Duration, value string, opts ...Option) (l *Lock, err error) {
	c := e.c
	ctx = c.callBegins(ctx, "campaign", e.name)
	defer func() { c.callEnds(ctx, "campaign", e.name, err) }()
	if e.err != nil {
		return nil, e.err
	}
	if value == "" {
		return nil, invalidArgument("empty value for election %q", e.name)
	}
	o, err := c.primOptions(leaderKind, e.name, ttl, append([]Option{WithRetryCount(-1)}, opts...))
	if err != nil {
		return nil, err
	}
	if _, err := keepAliveInterval(o, leaderKind, e.name, o.budget(ttl)); err != nil {
		return nil, err
	}
	if err := c.enterDo(); err != nil {
		return nil, err
	}
	l, err = c.acquireHold(ctx, o, e.name, e.key(o), ttl, waits, true, &leaderOps{value: value})
	if err != nil {
		c.dos.Done()
		return nil, err
	}
	go c.lead(ctx, l)
	return l, nil
}

// lead keeps the leadership l alive until it is released or lost, or
// ctx ends or the client closes, which resign. Close waits for it.
func (c *Client) lead(ctx context.Context, l *Lock) {
	defer c.dos.Done()
	kctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	defer cancel()
	defer context.AfterFunc(ctx, cancel)()
	defer context.AfterFunc(c.closing, cancel)()
	_ = l.KeepAlive(kctx) // a loss is told by Done and Err
	if l.Err() == nil {
		if err := l.Release(context.WithoutCancel(ctx)); err != nil {
			c.logger.Warn("redlock: resigning failed", "election", l.name, "error", err)
		}
	}
}

// Leader returns the value of the election's leader, when a quorum of
// servers agrees on the same holder; ErrNoLeader when none does, and a
// *QuorumError when too few servers answered to tell. Each server's read
// is bounded by the server timeout (500 ms by default).
func (e *Election) Leader(ctx context.Context) (string, error) {
	if e.err != nil {
		return "", e.err
	}
	v, _, err := e.leader(ctx)
	return v, err
}

// defaultReadTimeout bounds a server's call of a read, which has no TTL to
// derive it from, when no server timeout is set.
const defaultReadTimeout = 500 * time.Millisecond

func (c *Client) readTimeout() time.Duration {
	if c.serverTimeout > 0 {
		return c.serverTimeout
	}
	return defaultReadTimeout
}

// leader reads the leader from every server, and returns its value and
// the shortest TTL that any holder reported has left (when it may change
// without an announcement).
func (e *Election) leader(ctx context.Context) (string, time.Duration, error) {
	c := e.c
	if err := c.enter(); err != nil {
		return "", 0, err
	}
	defer c.exit()
	r := newAnswers(len(c.servers), func(ctx context.Context, _ int, ks keyserver.KeyServer) (keyserver.Leadership, error) {
		return ks.(keyserver.HoldKeeper).ReadLeader(ctx, e.key(&c.options))
	})
	t, err := c.read(ctx, fan{op: opRead, name: e.name, key: e.key(&c.options), timeout: c.readTimeout(), rule: everyAnswer, read: r})
	if err != nil {
		return "", 0, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	votes := make(map[string]int)
	var left time.Duration
	for i, ld := range r.got {
		if ld.Token == "" || t.failed(i) {
			continue
		}
		votes[ld.Token]++
		if left == 0 || ld.Left < left {
			left = max(ld.Left, time.Millisecond)
		}
		if votes[ld.Token] >= c.quorum {
			return ld.Value, left, nil
		}
	}
	if t.granted < c.quorum {
		return "", left, newQuorumError("read", leaderKind, e.name, 1, t, ctx.Err())
	}
	return "", left, fmt.Errorf("%w of election %q", ErrNoLeader, e.name)
}

// Observe returns a channel that receives the leader's value: first the
// current one ("" when none leads), then each change, never the same value
// twice in a row, woken by the servers' announcements. It is closed when
// ctx ends or the client closes, and without a value when two of the
// client's servers reach one store ("Elections" in docs/design.md).
func (e *Election) Observe(ctx context.Context) <-chan string {
	ch := make(chan string)
	if e.err != nil || e.c.enterDo() != nil {
		close(ch)
		return ch
	}
	go e.observe(ctx, ch)
	return ch
}

func (e *Election) observe(ctx context.Context, ch chan<- string) {
	c := e.c
	defer c.dos.Done()
	defer close(ch)
	// An observer watches as a leadership's campaigner does, without trying.
	var ws watches
	defer func() { ws.stop() }()
	of := watchOf{kind: &leaderOps{}, name: e.name, key: e.key(&c.options), timeout: c.readTimeout()}
	sent, last := false, ""
	for {
		ws.arm(ctx, c, of, &tally{}, nil, true) // before the read: a change after it is not missed
		v, left, err := e.leader(ctx)
		if errors.Is(err, ErrInvalidArgument) {
			c.logger.Error("redlock: election not observed", "election", e.name, "error", err)
			return // two servers are one store: no value can be trusted
		}
		if errors.Is(err, ErrNoLeader) {
			v, err = "", nil
		}
		if err == nil && (!sent || v != last) {
			select {
			case ch <- v:
				sent, last = true, v
			case <-ctx.Done():
				return
			case <-c.closing.Done():
				return
			}
		}
		wake, fired := ws.wake([]<-chan struct{}{c.closing.Done()})
		d := left
		switch {
		case fired > 0:
			d = 0 // a change since the watch: look again at once
		case err != nil || ws.armed() < len(ws):
			d = c.retryWait() // servers that did not answer announce nothing
			if left > 0 {
				d = min(d, left)
			}
		case d == 0:
			d = math.MaxInt64 // nobody leads, and no TTL runs out: until a change
		}
		if c.clock.SleepOrWake(ctx, d, wake) != nil || c.closing.Err() != nil {
			return
		}
	}
}

func (e *Election) key(o *options) string { return layout.ElectionKey(o.keyPrefix + e.name) }

// leaderOps are the calls of a leadership with its value.
type leaderOps struct {
	primitive
	value string
}

func (p *leaderOps) name() kindName    { return leaderKind }
func (p *leaderOps) attempt() holdKind { return p }

func (p *leaderOps) watch(ctx context.Context, ks keyserver.KeyServer, key, _ string, _ uint64) ([]<-chan struct{}, func(), error) {
	return watchHolds(ctx, ks, keyserver.HoldSpec{Kind: keyserver.LeaderHold, Key: key})
}

func (p *leaderOps) call(ctx context.Context, f fan, _ int, ks keyserver.KeyServer) (bool, uint64, keyserver.Holder, error) {
	ok, r, err := holdCall(ctx, &f, ks, keyserver.HoldSpec{Kind: keyserver.LeaderHold, Key: f.key, Token: f.token, Value: p.value})
	return ok, r.Fence, keyserver.Holder{}, err
}
