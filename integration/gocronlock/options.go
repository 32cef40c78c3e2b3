package gocronlock

import (
	"fmt"
	"time"

	"github.com/goredlock/goredlock/redlock"
)

// Defaults of the options.
const (
	// DefaultTTL is the lock's TTL: it is extended every third of it
	// while the job runs, and the lock of a host that crashed frees
	// itself within it.
	DefaultTTL = 10 * time.Second
	// DefaultMinHold is how long after it was granted a lock is kept at
	// least, for jobs that run every second or less often, on hosts whose
	// schedules fire less than half a second apart.
	DefaultMinHold = 500 * time.Millisecond
	// DefaultKeyPrefix is put before each job's name to make the lock's
	// name, so that job locks cannot collide with the program's other
	// locks.
	DefaultKeyPrefix = "gocron:"
)

// Option configures a Locker. Unlike redlock's duration options, a zero
// given here never stands for the default: WithMinHold(0) means no hold
// and WithTTL(0) is refused. Only an option left out gives the default.
type Option func(*config)

type config struct {
	ttl       time.Duration
	minHold   time.Duration
	keyPrefix string
	lockOpts  []redlock.Option
	onLost    func(job string)
	invalid   []error
}

func defaults() config {
	return config{ttl: DefaultTTL, minHold: DefaultMinHold, keyPrefix: DefaultKeyPrefix}
}

// WithTTL sets the TTL of each job's lock; it must be positive, and long
// enough for the client to extend the lock in time (redlock.Client.Do's
// rule: the keep-alive interval plus a server timeout must fit in the
// validity), or Lock fails with redlock.ErrInvalidArgument. Default
// DefaultTTL (10 s).
func WithTTL(d time.Duration) Option {
	return func(c *config) {
		if d <= 0 {
			c.invalidf("TTL %v is not positive", d)
		}
		c.ttl = d
	}
}

// WithMinHold sets how long after it was granted a lock is kept at least,
// even when the job returns sooner (see the package doc); 0 releases the
// lock as soon as the job returns. Default DefaultMinHold (500 ms).
func WithMinHold(d time.Duration) Option {
	return func(c *config) {
		if d < 0 {
			c.invalidf("min hold %v is negative", d)
		}
		c.minHold = d
	}
}

// WithKeyPrefix sets what is put before a job's name to make its lock's
// name; "" uses the job's name alone. The client's own key prefix
// (redlock.WithKeyPrefix), if any, still comes first on the servers.
// Default DefaultKeyPrefix ("gocron:").
func WithKeyPrefix(p string) Option {
	return func(c *config) { c.keyPrefix = p }
}

// WithLockOptions gives options to each lock's DoOrSkip call, overriding
// the client's for job locks only: retries, keep-alive interval, maximum
// hold, loss margin and so on. WithTTL and WithMinHold win over a
// redlock.WithMinHold given here. Default: the client's options.
func WithLockOptions(opts ...redlock.Option) Option {
	return func(c *config) { c.lockOpts = append(c.lockOpts, opts...) }
}

// WithOnLost sets a function to call, with the job's name, when a job's
// lock is declared lost while the job runs (see the package doc): the job
// may then run on another host at the same time. It runs on a goroutine of
// the lock, which Unlock waits for, so it should return soon. Default:
// none.
func WithOnLost(f func(job string)) Option {
	return func(c *config) { c.onLost = f }
}

func (c *config) invalidf(format string, args ...any) {
	c.invalid = append(c.invalid, fmt.Errorf(format, args...))
}
