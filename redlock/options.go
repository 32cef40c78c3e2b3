package redlock

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"time"

	"github.com/goredlock/goredlock/internal/clock"
)

// ClientOption configures a Client when given to New. Every Option is a
// ClientOption, the client's default for every call; WithLogger, WithHooks,
// WithFencing and WithKeyPrefix are ClientOptions only, so giving one to a
// call does not compile.
type ClientOption interface {
	applyClient(*options)
}

// Option configures one call of Acquire, TryAcquire, Do, DoOrSkip or a
// primitive, overriding the client's setting for that call, or, given to
// New, the client's default. For every duration option but
// WithRetryJitter, 0 means the default ("Choices this package makes" in
// docs/design.md).
type Option func(*options)

func (f Option) applyClient(o *options) {
	if f != nil {
		f(o)
	}
}

// clientOnly is a ClientOption that is not an Option.
type clientOnly func(*options)

func (f clientOnly) applyClient(o *options) { f(o) }

type options struct {
	retryCount    int
	retryDelay    time.Duration
	retryJitter   time.Duration
	driftFactor   float64
	serverTimeout time.Duration
	lossMargin    time.Duration
	keyPrefix     string
	logger        *slog.Logger
	clock         clock.Clock
	keepAlive     time.Duration
	maxExtensions int
	maxHold       time.Duration
	minHold       time.Duration
	hooks         Hooks
	fencing       bool
	quarantine    time.Duration // WithQuarantine's d: 0 the default, < 0 off
	lockDelay     time.Duration // WithLockDelay's d: 0 none
	randInt64N    func(n int64) int64
	newToken      func(rank) string

	// WithHandOver's d (0 the default, < 0 off) and WithHandOverPasses's n.
	handOver       time.Duration
	handOverPasses int

	invalidOptions []error
}

// Defaults of WithRetryCount, WithRetryDelay and WithDriftFactor.
const (
	DefaultRetryCount  = 10
	DefaultRetryDelay  = 200 * time.Millisecond
	DefaultDriftFactor = 0.01
)

// WithRetryCount sets a refused call's patience, with WithRetryDelay: n ×
// the retry delay after its first refusal, as much for each waiter ahead
// of it in a server's line ("Patience" in docs/design.md). 0 makes one
// attempt, and -1 waits until the context ends. Default 10.
func WithRetryCount(n int) Option {
	return func(o *options) { o.retryCount = o.count("retry count", n, -1) }
}

// WithRetryDelay sets the mean wait between the attempts of a call that
// polls, and with WithRetryCount the patience of every call. Default (or
// 0): 200 ms.
func WithRetryDelay(d time.Duration) Option {
	return func(o *options) {
		o.retryDelay = o.duration("retry delay", d, DefaultRetryDelay)
	}
}

// WithRetryJitter spreads the waits between attempts uniformly over
// delay±jitter, so that contenders that collided once do not collide again.
// It must not exceed the retry delay; 0 means no jitter (a wait may still
// end sooner, or a split vote back off; see "How primitives wait" in
// docs/design.md). Default: half the retry delay.
func WithRetryJitter(d time.Duration) Option {
	return func(o *options) { o.retryJitter = o.duration("retry jitter", d, 0) }
}

// WithDriftFactor sets the share of the TTL set aside for clock drift
// between this process and the servers; the drift is ttl·f + 2 ms and is
// subtracted from every lock's validity. It must be in [0, 1). Default 0.01.
func WithDriftFactor(f float64) Option {
	return func(o *options) {
		if math.IsNaN(f) || f < 0 || f >= 1 {
			o.invalid("drift factor %v is outside [0, 1)", f)
		}
		o.driftFactor = f
	}
}

// WithServerTimeout bounds each call to each server, so that a slow or dead
// server costs at most this long. Default (or 0): 5% of the lock's TTL, at
// least 1 ms.
func WithServerTimeout(d time.Duration) Option {
	return func(o *options) { o.serverTimeout = o.duration("server timeout", d, 0) }
}

// WithLossMargin sets how long before Until a lock that was not extended
// is declared lost, so that its holder can stop before another process may
// take it ("The holder hears first" in docs/design.md); a grant whose
// validity would not exceed it is no grant. Default (or 0): two server
// timeouts.
func WithLossMargin(d time.Duration) Option {
	return func(o *options) { o.lossMargin = o.duration("loss margin", d, 0) }
}

// WithKeyPrefix puts p before every name to make the keys stored on the
// servers, to keep lock keys apart from other data. A ClientOption, for
// New only: every call and read of a name (Election.Leader and Observe,
// Inspect, CheckFence) uses the client's one prefix. Default "".
func WithKeyPrefix(p string) ClientOption {
	return clientOnly(func(o *options) { o.keyPrefix = p })
}

// WithLogger sends the client's reports of server failures, failed
// extensions and lost locks to l. Tokens are never logged. It is a
// ClientOption, for New only. Default (or nil): nothing is logged.
func WithLogger(l *slog.Logger) ClientOption {
	return clientOnly(func(o *options) {
		if l == nil {
			l = discardLogger
		}
		o.logger = l
	})
}

// WithKeepAliveInterval sets how often KeepAlive (and Do) extends a lock.
// It must leave time for an extension to be answered before the lock would
// be declared lost. Default (or 0): a third of the lock's TTL.
func WithKeepAliveInterval(d time.Duration) Option {
	return func(o *options) { o.keepAlive = o.duration("keep-alive interval", d, 0) }
}

// WithMaxExtensions caps how many extensions KeepAlive (and Do) lets a lock
// have, so that a stuck job cannot hold a lock forever; direct Extend calls
// count towards the cap. Once it is reached, KeepAlive stops extending and
// the lock is declared lost at Until − loss margin. Default (or 0): no cap.
func WithMaxExtensions(n int) Option {
	return func(o *options) { o.maxExtensions = o.count("max extensions", n, 0) }
}

// WithMaxHold caps how long KeepAlive (and Do) keeps a lock, counted from
// its acquisition: no extension is made that would carry the lock past that
// point, and it then runs out. Default (or 0): no cap.
func WithMaxHold(d time.Duration) Option {
	return func(o *options) { o.maxHold = o.duration("max hold", d, 0) }
}

// WithMinHold keeps a lock until at least d after the start of the
// attempt that was granted it, so that hosts whose schedules fire a little
// apart skip the job: Release (and Do and DoOrSkip after fn) cuts the
// keys' TTL to the rest of d, never lengthening the lock, so give it a TTL
// of at least d ("Scheduled jobs" in docs/design.md). Default (or 0):
// release at once.
func WithMinHold(d time.Duration) Option {
	return func(o *options) { o.minHold = o.duration("min hold", d, 0) }
}

// NoQuarantine, given to WithQuarantine, turns the quarantine off.
const NoQuarantine time.Duration = -1

// WithQuarantine sets which key servers that lost their data
// (keyserver.Incarnators that do not persist every write) have their
// grants not counted toward a quorum, and for how long ("The quarantine of
// restarted servers" in docs/design.md). Default (or 0): a server whose
// data is younger than the call's TTL plus any WithLockDelay, whenever the
// client was made (a new deployment's first grant waits up to a TTL).
// d > 0: every server whose data is younger than d; give the largest TTL
// in use. NoQuarantine (any d < 0) counts every grant.
func WithQuarantine(d time.Duration) Option {
	return func(o *options) { o.quarantine = max(d, NoQuarantine) }
}

// duration checks a duration option: negative is invalid, 0 is def (which
// may be 0 itself, as for the jitter).
func (o *options) duration(what string, d, def time.Duration) time.Duration {
	switch {
	case d < 0:
		o.invalid("%s %v is negative", what, d)
	case d == 0:
		return def
	}
	return d
}

// count checks a count option: below least is invalid.
func (o *options) count(what string, n, least int) int {
	switch {
	case n >= least:
	case least == 0:
		o.invalid("%s %d is negative", what, n)
	default:
		o.invalid("%s %d is below %d", what, n, least)
	}
	return n
}

func (o *options) invalid(format string, args ...any) {
	o.invalidOptions = append(o.invalidOptions, invalidArgument(format, args...))
}

// invalidArgument is the error for bad input.
func invalidArgument(format string, args ...any) error {
	return fmt.Errorf("redlock: %w: "+format, append([]any{ErrInvalidArgument}, args...)...)
}

func defaultOptions() options {
	return options{
		retryCount:  DefaultRetryCount,
		retryDelay:  DefaultRetryDelay,
		retryJitter: halfTheDelay,
		driftFactor: DefaultDriftFactor,
		logger:      discardLogger,
		clock:       clock.Real{},
		newToken:    newToken,
	}
}

// check reports the first bad value, once every option has been applied.
func (o *options) check() error {
	if len(o.invalidOptions) > 0 {
		return o.invalidOptions[0]
	}
	if o.jitter() > o.retryDelay {
		return invalidArgument("retry jitter %v exceeds retry delay %v, so waits could be negative",
			o.jitter(), o.retryDelay)
	}
	return nil
}

// with returns o with a call's opts applied, or o itself when there are
// none, so that calls without options cost nothing.
func (o *options) with(opts []Option) (*options, error) {
	if len(opts) == 0 {
		return o, nil
	}
	call := *o
	call.invalidOptions = nil
	for _, opt := range opts {
		opt.applyClient(&call) // skips a nil opt
	}
	if err := call.check(); err != nil {
		return nil, err
	}
	return &call, nil
}

// halfTheDelay marks retryJitter's default: half the retry delay.
const halfTheDelay = -1

// jitter is the spread of the waits between attempts.
func (o *options) jitter() time.Duration {
	if o.retryJitter == halfTheDelay {
		return o.retryDelay / 2
	}
	return o.retryJitter
}

// retryWait draws the wait before the next attempt from delay±jitter.
func (o *options) retryWait() time.Duration {
	j := o.jitter()
	if j == 0 {
		return o.retryDelay
	}
	r := rand.Int64N
	if o.randInt64N != nil {
		r = o.randInt64N
	}
	return o.retryDelay - j + time.Duration(r(int64(2*j)+1))
}

// timeoutFor is the bound on one call to one server for a lock of ttl.
func (o *options) timeoutFor(ttl time.Duration) time.Duration {
	if o.serverTimeout > 0 {
		return o.serverTimeout
	}
	return max(ttl/20, time.Millisecond)
}

// budget is what a hold's TTL gives each of its calls, worked out once
// per grant or extension and carried by the call and the Lock.
type budget struct {
	ttl     time.Duration
	timeout time.Duration // the bound on one call to one server
	margin  time.Duration // how long before Until the hold is declared lost
}

func (o *options) budget(ttl time.Duration) budget {
	return budget{ttl: ttl, timeout: o.timeoutFor(ttl), margin: o.marginFor(ttl)}
}

// marginFor is the loss margin of a lock of ttl.
func (o *options) marginFor(ttl time.Duration) time.Duration {
	if o.lossMargin > 0 {
		return o.lossMargin
	}
	return 2 * o.timeoutFor(ttl)
}

// discardLogger drops every record; slog.DiscardHandler needs Go 1.24.
var discardLogger = slog.New(discardHandler{})

type discardHandler struct{}

func (discardHandler) Enabled(context.Context, slog.Level) bool  { return false }
func (discardHandler) Handle(context.Context, slog.Record) error { return nil }
func (h discardHandler) WithAttrs([]slog.Attr) slog.Handler      { return h }
func (h discardHandler) WithGroup(string) slog.Handler           { return h }
