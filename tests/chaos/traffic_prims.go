package chaos

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/goredlock/goredlock/redlock"
)

// The workloads of the primitives on the same quorum: a semaphore's
// permits, a read-write lock's readers and writers, an election's leaders
// and observers. Their clients run beside the lock's, through their own
// paths to the same faulted nodes.

// permit takes a permit of a semaphore: three times in four with Acquire,
// held briefly or, one time in three, kept alive by hand through a long
// job; otherwise under the semaphore's Do with a short job.
func (c *client) permit(ctx context.Context) {
	sem := c.load.Semaphores[c.rng.IntN(len(c.load.Semaphores))]
	s := c.rc.Semaphore(sem.Name, sem.Permits)
	if c.rng.IntN(4) == 0 {
		c.under(ctx, "permit do", Permit, sem.Name, sem.Permits, c.between(0, c.load.PrimHold),
			func(ctx context.Context, fn func(context.Context) error) error { return s.Do(ctx, c.load.TTL, fn) })
		return
	}
	l, g, ok := c.take(ctx, "permit", Permit, func(ctx context.Context) (*redlock.Lock, error) {
		return s.Acquire(ctx, c.load.TTL)
	})
	if !ok {
		return
	}
	g.Permits = sem.Permits
	if c.rng.IntN(3) == 0 {
		c.keepAliveFor(ctx, l, &g, c.between(c.load.MinJob, c.load.MaxJob))
	} else {
		c.hold(l, &g, c.careful(l, c.load.PrimHold), ctx.Done())
	}
	c.release(l, &g)
}

// reader takes a read hold: four times in five with RLock, held briefly;
// otherwise under RDo with a job that outlasts the TTL half of the time,
// so that read holds are extended, one by one, while writers wait.
func (c *client) reader(ctx context.Context) {
	c.readWrite(ctx, Reader, 5, c.load.PrimHold, c.load.TTL/2, c.load.MinJob)
}

// writer takes a write hold: three times in four with Lock, held as
// briefly as the lock's short holds; otherwise under Do with a job up to
// a read hold's length.
func (c *client) writer(ctx context.Context) {
	c.readWrite(ctx, Writer, 4, c.load.MaxHold, 0, c.load.PrimHold)
}

// readWrite takes a hold of a read-write lock for work (Reader or
// Writer): one time in oneIn under RDo or Do with a job of jobMin to
// jobMax, otherwise with RLock or Lock and a careful hold up to hold.
func (c *client) readWrite(ctx context.Context, work Workload, oneIn int, hold, jobMin, jobMax time.Duration) {
	name := c.pick(c.load.RWNames)
	m := c.rc.RWMutex(name)
	op, lock, do := "rlock", m.RLock, m.RDo
	if work == Writer {
		op, lock, do = "lock", m.Lock, m.Do
	}
	if c.rng.IntN(oneIn) == 0 {
		c.under(ctx, op+" do", work, name, 0, c.between(jobMin, jobMax),
			func(ctx context.Context, fn func(context.Context) error) error { return do(ctx, c.load.TTL, fn) })
		return
	}
	l, g, ok := c.take(ctx, op, work, func(ctx context.Context) (*redlock.Lock, error) { return lock(ctx, c.load.TTL) })
	if !ok {
		return
	}
	c.hold(l, &g, c.careful(l, hold), ctx.Done())
	c.release(l, &g)
}

// campaign campaigns for an election with a value of its own (so that
// Leader reads name the term), waiting as long as it takes, leads for a
// long job (Campaign keeps the leadership alive past its TTL) or until the
// leadership is lost, and resigns.
func (c *client) campaign(ctx context.Context) {
	name := c.pick(c.load.Elections)
	c.campaigns++
	value := fmt.Sprintf("client%d.%d", c.id, c.campaigns)
	l, g, ok := c.take(ctx, "campaign", Leader, func(context.Context) (*redlock.Lock, error) {
		// Not take's context with the patience: its end would resign.
		// Campaign waits until it leads or the run ends.
		return c.rc.Election(name).Campaign(ctx, c.load.TTL, value)
	})
	if !ok {
		return
	}
	c.hold(l, &g, c.between(c.load.MinJob, c.load.MaxJob), ctx.Done())
	c.release(l, &g)
}

// observe watches an election: every other time one Leader read, else an
// Observe stream for a TTL or two, whose values must never repeat one in a
// row.
func (c *client) observe(ctx context.Context) {
	e := c.rc.Election(c.pick(c.load.Elections))
	if c.rng.IntN(2) == 0 {
		rctx, cancel := context.WithTimeout(ctx, c.load.Patience)
		defer cancel()
		_, err := e.Leader(rctx)
		switch {
		case err == nil:
			c.reads++
		case errors.Is(err, redlock.ErrNoLeader):
			c.noLeader++
		default:
			c.fail(ctx, "leader", err)
		}
		return
	}
	octx, cancel := context.WithTimeout(ctx, c.between(c.load.TTL, 2*c.load.TTL))
	defer cancel()
	first, last := true, ""
	for v := range e.Observe(octx) {
		if !first && v == last {
			c.repeats = append(c.repeats, v)
		}
		first, last = false, v
		c.changes++
	}
}
