package gocronlock

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/go-co-op/gocron/v2"

	"github.com/goredlock/goredlock/redlock"
)

// Locker is a gocron.Locker over a redlock.Client; see the package doc.
// It is safe for concurrent use, by one scheduler or several.
type Locker struct {
	client *redlock.Client
	ttl    time.Duration
	prefix string
	opts   []redlock.Option // for DoOrSkip: the user's, then the min hold
	onLost func(job string)
}

var _ gocron.Locker = (*Locker)(nil)

// New returns a Locker that takes job locks with client. It fails with an
// error satisfying errors.Is(err, redlock.ErrInvalidArgument) for a nil
// client or a bad option. The Locker does not own the client: close the
// client after the schedulers that use the Locker have shut down.
func New(client *redlock.Client, opts ...Option) (*Locker, error) {
	c := defaults()
	for _, o := range opts {
		o(&c)
	}
	if client == nil {
		c.invalidf("nil client")
	}
	if len(c.invalid) > 0 {
		return nil, fmt.Errorf("gocronlock: %w: %w", redlock.ErrInvalidArgument, errors.Join(c.invalid...))
	}
	lockOpts := append(append([]redlock.Option(nil), c.lockOpts...), redlock.WithMinHold(c.minHold))
	return &Locker{client: client, ttl: c.ttl, prefix: c.keyPrefix, opts: lockOpts, onLost: c.onLost}, nil
}

// Lock takes the lock of the job called key, and keeps it alive until
// Unlock. When another host holds it, the error satisfies errors.Is(err,
// redlock.ErrHeldElsewhere), and gocron skips the run on this host. ctx
// bounds the acquisition only: the lock is kept alive, and released by
// Unlock, even after ctx ends.
func (k *Locker) Lock(ctx context.Context, key string) (gocron.Lock, error) {
	l := &lock{job: key, unlock: make(chan struct{}), done: make(chan struct{})}
	held := make(chan struct{})
	go func() {
		defer close(l.done)
		l.ran, l.err = k.client.DoOrSkip(ctx, k.prefix+key, k.ttl, func(ctx context.Context) error {
			rl, _ := redlock.LockFromContext(ctx)
			close(held)
			// ctx ends with the job's context too (a scheduler shutting
			// down), but the job goes on until gocron calls Unlock, and
			// the lock with it. Only a lost lock ends the wait early.
			select {
			case <-l.unlock:
			case <-rl.Done():
				if k.onLost != nil {
					k.onLost(key)
				}
			}
			return nil
		}, k.opts...)
	}()
	select {
	case <-held:
		return l, nil
	case <-l.done:
	}
	switch {
	case l.ran: // granted, then lost before the job could start
		return nil, fmt.Errorf("gocronlock: job %q: lock lost as it was granted: %w", key, l.err)
	case l.err != nil:
		return nil, fmt.Errorf("gocronlock: job %q: %w", key, l.err)
	}
	return nil, fmt.Errorf("gocronlock: job %q runs on another host: %w", key, redlock.ErrHeldElsewhere)
}

// lock is a job's lock, held by a DoOrSkip call on a goroutine of its own
// from Lock to Unlock.
type lock struct {
	job    string
	once   sync.Once
	unlock chan struct{} // closed by Unlock: the job ended
	done   chan struct{} // closed when DoOrSkip has returned
	ran    bool          // DoOrSkip's results, read after done
	err    error
}

// Unlock ends the job's hold on the lock: it deletes the keys, or, within
// the minimum hold, cuts their TTL to what is left of it. It returns when
// the key servers were told, ignoring ctx's cancellation (each server's
// call is bounded by the client's server timeout), and leaves nothing
// running. The error satisfies errors.Is(err, redlock.ErrLockLost) when the
// lock was lost while the job ran, and redlock.ErrNotHeld when Unlock was
// called before. A failure to release is logged by the client (see
// redlock.WithLogger), not returned: the keys then expire with their TTL.
func (l *lock) Unlock(context.Context) error {
	first := false
	l.once.Do(func() {
		first = true
		close(l.unlock)
	})
	if !first {
		return fmt.Errorf("gocronlock: job %q: %w: already unlocked", l.job, redlock.ErrNotHeld)
	}
	<-l.done
	if l.err != nil {
		return fmt.Errorf("gocronlock: job %q: %w", l.job, l.err)
	}
	return nil
}
