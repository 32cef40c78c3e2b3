package redlock

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"time"

	"github.com/goredlock/goredlock/internal/clock"
)

// Option configures a Client; pass them to New.
type Option func(*options)

type options struct {
	retryCount     int
	retryDelay     time.Duration
	retryJitter    time.Duration
	jitterSet      bool
	driftFactor    float64
	serverTimeout  time.Duration
	keyPrefix      string
	logger         *slog.Logger
	clock          clock.Clock
	keepAlive      time.Duration
	maxExtensions  int
	maxHold        time.Duration
	randInt64N     func(n int64) int64
	newToken       func() (string, error)
	invalidOptions []error
}

// Defaults, as in the package documentation.
const (
	DefaultRetryCount  = 10
	DefaultRetryDelay  = 200 * time.Millisecond
	DefaultDriftFactor = 0.01
)

// WithRetryCount sets how many times Acquire tries again after its first
// attempt fails; 0 makes Acquire behave like TryAcquire, and -1 retries
// until the context ends. Default 10.
func WithRetryCount(n int) Option {
	return func(o *options) {
		if n < -1 {
			o.invalid("retry count %d is below -1", n)
		}
		o.retryCount = n
	}
}

// WithRetryDelay sets the mean wait between attempts. Default 200 ms.
func WithRetryDelay(d time.Duration) Option {
	return func(o *options) {
		if d < 0 {
			o.invalid("retry delay %v is negative", d)
		}
		o.retryDelay = d
	}
}

// WithRetryJitter spreads the waits between attempts uniformly over
// delay±jitter, so that contenders that collided once do not collide again.
// It must not exceed the retry delay. Default: half the retry delay.
func WithRetryJitter(d time.Duration) Option {
	return func(o *options) {
		if d < 0 {
			o.invalid("retry jitter %v is negative", d)
		}
		o.retryJitter, o.jitterSet = d, true
	}
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
	return func(o *options) {
		if d < 0 {
			o.invalid("server timeout %v is negative", d)
		}
		o.serverTimeout = d
	}
}

// WithKeyPrefix puts p before every lock name to make the key stored on the
// servers, to keep lock keys apart from other data. Default "".
func WithKeyPrefix(p string) Option {
	return func(o *options) { o.keyPrefix = p }
}

// WithLogger sends the client's reports of server failures, failed
// extensions and lost locks to l. Tokens are never logged. Default (or nil):
// nothing is logged.
func WithLogger(l *slog.Logger) Option {
	return func(o *options) {
		if l == nil {
			l = discardLogger
		}
		o.logger = l
	}
}

// withClock replaces the clock; tests use a fake one.
func withClock(c clock.Clock) Option {
	return func(o *options) { o.clock = c }
}

func (o *options) invalid(format string, args ...any) {
	o.invalidOptions = append(o.invalidOptions, fmt.Errorf("%w: "+format, append([]any{ErrInvalidArgument}, args...)...))
}

func defaultOptions() options {
	return options{
		retryCount:  DefaultRetryCount,
		retryDelay:  DefaultRetryDelay,
		driftFactor: DefaultDriftFactor,
		logger:      discardLogger,
		clock:       clock.Real{},
		newToken:    newToken,
	}
}

// check fills in the defaults that depend on other options and reports the
// first bad value.
func (o *options) check() error {
	if len(o.invalidOptions) > 0 {
		return o.invalidOptions[0]
	}
	if !o.jitterSet {
		o.retryJitter = o.retryDelay / 2
	}
	if o.retryJitter > o.retryDelay {
		return fmt.Errorf("%w: retry jitter %v exceeds retry delay %v, so waits could be negative",
			ErrInvalidArgument, o.retryJitter, o.retryDelay)
	}
	return nil
}

// discardLogger drops every record; slog.DiscardHandler needs Go 1.24.
var discardLogger = slog.New(discardHandler{})

type discardHandler struct{}

func (discardHandler) Enabled(context.Context, slog.Level) bool  { return false }
func (discardHandler) Handle(context.Context, slog.Record) error { return nil }
func (h discardHandler) WithAttrs([]slog.Attr) slog.Handler      { return h }
func (h discardHandler) WithGroup(string) slog.Handler           { return h }

// WithKeepAliveInterval sets how often KeepAlive (and Do) extends a lock.
// It must be shorter than the lock's validity; the default (or 0) is a
// third of the lock's TTL.
func WithKeepAliveInterval(d time.Duration) Option {
	return func(o *options) {
		if d < 0 {
			o.invalid("keep-alive interval %v is negative", d)
		}
		o.keepAlive = d
	}
}

// WithMaxExtensions caps how many extensions KeepAlive (and Do) lets a lock
// have, so that a stuck job cannot hold a lock forever; direct Extend calls
// count towards the cap. Once it is reached, KeepAlive stops extending and
// the lock is declared lost before its Until. Default (or 0): no cap.
func WithMaxExtensions(n int) Option {
	return func(o *options) {
		if n < 0 {
			o.invalid("max extensions %d is negative", n)
		}
		o.maxExtensions = n
	}
}

// WithMaxHold caps how long KeepAlive (and Do) keeps a lock, counted from
// its acquisition: no extension is made that would carry the lock past that
// point, and it then runs out. Default (or 0): no cap.
func WithMaxHold(d time.Duration) Option {
	return func(o *options) {
		if d < 0 {
			o.invalid("max hold %v is negative", d)
		}
		o.maxHold = d
	}
}
