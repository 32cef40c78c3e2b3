package redlock

import (
	"context"
	"reflect"
	"sync"
	"time"

	"github.com/goredlock/goredlock/internal/startcall"
	"github.com/goredlock/goredlock/keyserver"
)

// Client takes locks on a set of independent key servers by majority vote:
// the DistributedLockClient of the Redlock algorithm. It is safe for
// concurrent use; share one per set of servers, and Close it when done.
type Client struct {
	servers   []keyserver.KeyServer
	starters  []startcall.Starter // by server, nil where not one; nil if none is
	quorum    int
	inProcess bool // every server is a keyserver.InProcess
	options
	health health
	polled polled // servers whose waiters poll (see polled)
	// notifiers are the indexes of the servers that are Notifiers, where a
	// waiting call waits in line; notifierMask their bits (all from 64 on).
	notifiers    []int
	notifierMask uint64
	// released holds the calls of recent releases still running (see
	// releases); queues the waiting calls by key (*queue).
	released releases
	queues   sync.Map
	// asked is the semaphore slots its attempts are asking for (asked).
	asked asked
	// identities tells servers that reach one store (see identities).
	identities identities
	// quarantine judges the grants of restarted servers; nil when no
	// server can tell its incarnation.
	quarantine *quarantine

	// closing ends when Close begins: calls that wait for a lock stop
	// waiting, and Do and DoOrSkip end fn's context and release.
	closing     context.Context
	stopClosing context.CancelFunc

	mu       sync.Mutex
	shutting bool // Close has begun: no new Do or acquisition
	closed   bool // Close has waited for every Do: no server call either
	// dos counts the Do and DoOrSkip calls in progress, which Close ends
	// first, while their releases can still reach the servers.
	dos sync.WaitGroup
	// bg counts the calls in progress and the work they left, for Close.
	bg sync.WaitGroup
}

// New returns a Client over servers: give it an odd number of independent
// servers, 3 or 5 in production (New warns of an even number). It fails
// with ErrInvalidArgument for an empty list, a nil server, a server given
// twice or a bad option value.
func New(servers []keyserver.KeyServer, opts ...ClientOption) (*Client, error) {
	if len(servers) == 0 {
		return nil, invalidArgument("no key servers")
	}
	for i, s := range servers {
		if isNil(s) {
			return nil, invalidArgument("key server %d is nil", i)
		}
		for j := range i {
			if same(servers[j], s) {
				return nil, invalidArgument("key servers %d and %d are the same server, whose votes would count twice", j, i)
			}
		}
	}
	o := defaultOptions()
	for _, opt := range opts {
		if opt != nil {
			opt.applyClient(&o)
		}
	}
	if err := o.check(); err != nil {
		return nil, err
	}
	if o.fencing {
		if err := checkFencers(servers); err != nil {
			return nil, err
		}
	}
	if n := len(servers); n%2 == 0 {
		o.logger.Warn("redlock: an even number of key servers tolerates no more failures than one fewer",
			"servers", n, "failures_tolerated", n-quorum(n))
	}
	c := &Client{
		servers: append([]keyserver.KeyServer(nil), servers...),
		quorum:  quorum(len(servers)),
		options: o,
		health:  newHealth(len(servers)),
		polled:  make(polled, len(servers)),
	}
	c.closing, c.stopClosing = context.WithCancel(context.Background())
	c.identities.init(c.servers)
	c.quarantine = newQuarantine(c.servers, o.clock)
	c.learn(servers)
	return c, nil
}

// learn records what the servers can do: keep lines (Notifier), answer at
// once (InProcess), start calls ("Started calls" in docs/design.md).
func (c *Client) learn(servers []keyserver.KeyServer) {
	c.inProcess = true
	for i, s := range servers {
		if _, ok := s.(keyserver.Notifier); ok {
			c.notifiers = append(c.notifiers, i)
			c.notifierMask |= bit(i)
		}
		if _, ok := s.(keyserver.InProcess); !ok {
			c.inProcess = false
		}
		if st := startcall.Of(s); st != nil {
			if c.starters == nil {
				c.starters = make([]startcall.Starter, len(servers))
			}
			c.starters[i] = st
		}
	}
}

// isNil reports whether s is nil, also as a typed nil pointer in the
// interface, which would otherwise panic at the first call.
func isNil(s keyserver.KeyServer) bool {
	if s == nil {
		return true
	}
	switch v := reflect.ValueOf(s); v.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Func, reflect.Chan, reflect.Slice, reflect.Interface:
		return v.IsNil()
	}
	return false
}

// same reports whether a and b are one key server given twice as one
// pointer; two values that reach one store are told apart by identities.
func same(a, b keyserver.KeyServer) bool {
	ta := reflect.TypeOf(a)
	return ta == reflect.TypeOf(b) && ta.Kind() == reflect.Pointer && a == b
}

// Quorum returns how many servers must agree: a strict majority of them.
func (c *Client) Quorum() int { return c.quorum }

// Close ends the client's work and waits for it ("Close" in
// docs/design.md). Waiting calls end with ErrClosed; Do and DoOrSkip cancel
// fn's context (cause ErrClosed), release once fn returns, and return an
// error matching ErrClosed. After Close every call on the client and its
// locks returns ErrClosed without reaching a server, so release locks
// first. Close does not close the key servers. A second Close, or Close on
// a nil Client, returns nil.
func (c *Client) Close() error {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	c.shutting = true
	c.mu.Unlock()
	c.stopClosing()
	c.dos.Wait()
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
	c.bg.Wait()
	return nil
}

// enter registers a call that reaches the servers, so that Close waits for
// it and for what it leaves running; it fails once Close has ended the
// client's Do calls. Every enter is paired with an exit.
func (c *Client) enter() error { return c.join(&c.bg, &c.closed) }

func (c *Client) exit() { c.bg.Done() }

// enterDo registers a Do or DoOrSkip call, which Close ends and waits for
// first; it fails once Close has begun. Paired with c.dos.Done.
func (c *Client) enterDo() error { return c.join(&c.dos, &c.shutting) }

// join adds a call to wg unless Close got as far as past says.
func (c *Client) join(wg *sync.WaitGroup, past *bool) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if *past {
		return ErrClosed
	}
	wg.Add(1)
	return nil
}

// beginAttempt is enter for an attempt to take a lock: it fails once Close
// has begun (a Do being ended must not take a new lock) or two servers
// reach one store (see identities). The caller exits when the attempt ends.
func (c *Client) beginAttempt() error {
	if err := c.join(&c.bg, &c.shutting); err != nil {
		return err
	}
	if err := c.identities.failed(); err != nil {
		c.exit()
		return err
	}
	return nil
}

// Acquire takes the lock called name for ttl, waiting while it is held
// elsewhere or the servers fail, as WithRetryCount allows. The lock is
// valid until lock.Until(), a little less than ttl from now.
//
// The error is a *QuorumError matching ErrNotAcquired; also
// ErrHeldElsewhere when a quorum answered that another token holds the
// lock, and ctx.Err() when the context ended first. errors.As(err,
// &serverErr) finds each server's failure. Failures that retrying cannot
// fix end the retries at once.
func (c *Client) Acquire(ctx context.Context, name string, ttl time.Duration, opts ...Option) (*Lock, error) {
	return c.takeHold(ctx, "acquire", lockKind, name, nil, ttl, waits, false, nil, opts, c.lockHold(name))
}

// TryAcquire makes a single attempt to take the lock: Acquire with no
// retries.
func (c *Client) TryAcquire(ctx context.Context, name string, ttl time.Duration, opts ...Option) (*Lock, error) {
	return c.takeHold(ctx, "try_acquire", lockKind, name, nil, ttl, once, false, nil, opts, c.lockHold(name))
}

// lockHold gives takeHold the key and calls of the lock called name.
func (c *Client) lockHold(name string) func(*options) (string, holdKind) {
	return func(o *options) (string, holdKind) { return o.keyPrefix + name, lockOps{} }
}

// callBegins reports the beginning of a call to the hooks and returns its context.
func (c *Client) callBegins(ctx context.Context, op, name string) context.Context {
	if c.hooks.Start != nil {
		return c.hooks.Start(ctx, op, name)
	}
	return ctx
}

// callEnds reports the end of a call to the hooks.
func (c *Client) callEnds(ctx context.Context, op, name string, err error) {
	if c.hooks.End != nil {
		c.hooks.End(ctx, op, name, err)
	}
}
