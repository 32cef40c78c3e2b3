package chaos

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/goredlock/goredlock/keyserver"
	"github.com/goredlock/goredlock/keyserver/redis"
	"github.com/goredlock/goredlock/redlock"
)

// Load is what the clients do: which names they take, for how long, how
// often.
type Load struct {
	Names     []string      // taken by Acquire and DoOrSkip clients
	LongNames []string      // taken by Do and KeepAlive clients, and now and then by Acquire clients
	TTL       time.Duration // of every lock; the largest TTL of the run
	MaxHold   time.Duration // short holds (Acquire, DoOrSkip) last up to this long
	MinJob    time.Duration // long jobs (Do, KeepAlive) last between MinJob and MaxJob
	MaxJob    time.Duration
	Think     time.Duration // a client pauses up to this long between operations

	RetryCount  int           // Acquire's retries
	RetryDelay  time.Duration // and its delay between attempts
	RetryJitter time.Duration
	Patience    time.Duration // how long an Acquire client waits for a lock

	// Goroutines is how many goroutines of each Acquire and Do client take
	// its locks at once, over its one redlock.Client: a lock released with
	// another of them waiting for it is passed without the servers
	// (hand-over inside a process), which Report.Passes counts. 0 is 1.
	Goroutines int

	SetNames []string // taken two or three at a time by AcquireAll clients

	Quarantine time.Duration // redlock.WithQuarantine's: 0 the default, NoQuarantine off
	Query      string        // added to each node's URL (Scenario.Query)
	LockDelay  time.Duration // redlock.WithLockDelay's: 0 none

	Semaphores []Semaphore   // taken by Permit clients
	RWNames    []string      // read-write locks, taken by Reader and Writer clients
	Elections  []string      // campaigned for by Leader clients, watched by Observer clients
	PrimHold   time.Duration // permits and read holds that are not long jobs last up to this long
}

// Semaphore is a semaphore of the workloads: its name and permit count.
type Semaphore struct {
	Name    string
	Permits int
}

// releaseTimeout bounds a Release; the lock's own server timeout bounds
// each call, this only guards the suite against a hang.
const releaseTimeout = 5 * time.Second

// client is one independent process of the suite: its own key servers
// (its own connection pools), its own redlock client, one workload.
type client struct {
	id      int
	work    Workload
	rc      *redlock.Client
	servers []*redis.Server
	h       *History
	rng     *rand.Rand
	load    *Load

	campaigns int // Campaign calls, which number the values of its leaderships

	// Read once run has returned.
	failures map[string]int // failed operations by kind
	skips    int            // DoOrSkip calls that skipped
	reads    int            // Leader reads that named a leader
	noLeader int            // Leader reads that found none (ErrNoLeader)
	changes  int            // values Observe sent
	repeats  []string       // values Observe sent twice in a row, which it must never do
}

// newClient connects a client to the nodes at addrs (its paths to them).
// With clocks, it keeps each node's time by its clock's rate (Skewed).
func newClient(id int, work Workload, addrs []string, load *Load, h *History, seed uint64, clocks *Clocks) (*client, error) {
	c := &client{id: id, work: work, h: h, load: load, failures: make(map[string]int),
		rng: rand.New(rand.NewPCG(seed, uint64(id)))}
	var ks []keyserver.KeyServer
	for i, a := range addrs {
		s, err := redis.FromURL("redis://"+a+load.Query, redis.WithName(fmt.Sprintf("node%d", i)))
		if err != nil {
			c.close() //nolint:errcheck // reporting the first error
			return nil, err
		}
		c.servers = append(c.servers, s)
		if clocks != nil {
			ks = append(ks, Skewed(s, clocks, i))
		} else {
			ks = append(ks, s)
		}
	}
	opts := append([]redlock.ClientOption{
		redlock.WithRetryCount(load.RetryCount),
		redlock.WithRetryDelay(load.RetryDelay),
		redlock.WithRetryJitter(load.RetryJitter),
		redlock.WithQuarantine(load.Quarantine),
		redlock.WithLockDelay(load.LockDelay),
	}, clientOptions(id)...)
	if work == AcquireAll {
		opts = append(opts, setClientOptions(id)...)
	}
	rc, err := redlock.New(ks, opts...)
	if err != nil {
		c.close() //nolint:errcheck // reporting the first error
		return nil, err
	}
	c.rc = rc
	return c, nil
}

// workers returns the client's goroutines (Load.Goroutines for an Acquire
// or Do client, else the client alone): each a client of its own for its
// draws and its counts, over the same redlock.Client, which the client
// itself owns and closes.
func (c *client) workers() []*client {
	ws := []*client{c}
	if c.work != Acquire && c.work != Do {
		return ws
	}
	for k := 1; k < c.load.Goroutines; k++ {
		ws = append(ws, &client{id: c.id, work: c.work, rc: c.rc, h: c.h, load: c.load, failures: make(map[string]int),
			rng: rand.New(rand.NewPCG(c.rng.Uint64(), uint64(k)))})
	}
	return ws
}

// close closes the redlock client, then its key servers and their pools.
func (c *client) close() error {
	var errs []error
	if c.rc != nil {
		errs = append(errs, closeClient(c.rc))
	}
	for _, s := range c.servers {
		errs = append(errs, s.Close())
	}
	return errors.Join(errs...)
}

// run does the client's workload (its kind's row in holdKinds) until ctx
// ends.
func (c *client) run(ctx context.Context) {
	do := runner(c.work)
	for ctx.Err() == nil {
		do(c, ctx)
		sleep(ctx, c.between(0, c.load.Think))
	}
}

// acquire takes a lock, holds it briefly (never more than half of what is
// left of its validity, as a careful holder would) and releases it; it
// stops holding as soon as it hears the lock is lost.
func (c *client) acquire(ctx context.Context) {
	name := c.pick(c.load.Names)
	if len(c.load.LongNames) > 0 && c.rng.IntN(10) == 0 {
		name = c.pick(c.load.LongNames) // contend with the long jobs too
	}
	l, g, ok := c.take(ctx, "acquire", Acquire, c.acquirer(name))
	if !ok {
		return
	}
	c.hold(l, &g, c.careful(l, c.load.MaxHold), nil)
	c.release(l, &g)
}

// careful draws a hold of l up to d, and never more than half of what is
// left of its validity, as a careful holder would.
func (c *client) careful(l *redlock.Lock, d time.Duration) time.Duration {
	return min(c.between(0, d), time.Until(l.Until())/2)
}

// holdout takes a long-job name and holds it until holdoutSlack before its
// Until, as a holder that uses all of the validity Until promises may: the
// hold that a node whose clock runs fast cuts short. It does not stop at
// Done, which closes a loss margin before Until (a tenth of the TTL by
// default) and so would hide the skew's harm below that.
func (c *client) holdout(ctx context.Context) {
	name := c.pick(c.load.LongNames)
	l, g, ok := c.take(ctx, "acquire", Holdout, c.acquirer(name))
	if !ok {
		return
	}
	sleep(ctx, time.Until(l.Until())-holdoutSlack)
	c.release(l, &g)
}

// take acquires a lock or a hold of a primitive with get, for work,
// within the load's patience, and starts its grant; when nothing is
// granted it counts the failure as op's and ok is false.
func (c *client) take(ctx context.Context, op string, work Workload, get func(context.Context) (*redlock.Lock, error)) (l *redlock.Lock, g Grant, ok bool) {
	actx, cancel := context.WithTimeout(ctx, c.load.Patience)
	defer cancel()
	asked := c.h.Now()
	l, err := get(actx)
	if err != nil {
		c.fail(ctx, op, err)
		return nil, Grant{}, false
	}
	g = c.granted(l, work)
	g.Asked = asked
	return l, g, true
}

// acquirer takes the lock name with the load's TTL, for take.
func (c *client) acquirer(name string) func(context.Context) (*redlock.Lock, error) {
	return func(ctx context.Context) (*redlock.Lock, error) { return c.rc.Acquire(ctx, name, c.load.TTL) }
}

// holdoutSlack is how long before its Until a holdout releases: about a
// round trip, so that its release reaches the nodes before the lock runs
// out.
const holdoutSlack = 2 * time.Millisecond

// keepAlive takes a lock and keeps it alive by hand through a long job.
func (c *client) keepAlive(ctx context.Context) {
	name := c.pick(c.load.LongNames)
	l, err := c.rc.Acquire(ctx, name, c.load.TTL)
	if err != nil {
		c.fail(ctx, "acquire", err)
		return
	}
	g := c.granted(l, KeepAlive)
	c.keepAliveFor(ctx, l, &g, c.between(c.load.MinJob, c.load.MaxJob))
	c.release(l, &g)
}

// keepAliveFor keeps l alive by hand for d, until it ends or ctx does.
func (c *client) keepAliveFor(ctx context.Context, l *redlock.Lock, g *Grant, d time.Duration) {
	kctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		_ = l.KeepAlive(kctx) // its end shows in Done and Err
	}()
	c.hold(l, g, d, ctx.Done())
	stop()
	wg.Wait()
}

// hold waits for d, for the lock to end, or for stop, and records a loss.
func (c *client) hold(l *redlock.Lock, g *Grant, d time.Duration, stop <-chan struct{}) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-stop:
	case <-l.Done():
		at := c.h.Now()
		if errors.Is(l.Err(), redlock.ErrLockLost) {
			g.Lost = at
		}
	}
}

// do runs a long job under Do.
func (c *client) do(ctx context.Context) {
	name := c.pick(c.load.LongNames)
	c.under(ctx, "do", Do, name, 0, c.between(c.load.MinJob, c.load.MaxJob),
		func(ctx context.Context, fn func(context.Context) error) error {
			return c.rc.Do(ctx, name, c.load.TTL, fn)
		})
}

// under runs a job of d under do (a Do of the lock or of a primitive,
// which calls fn while it holds name) and records its grant; permits is
// the semaphore's count, for a permit.
func (c *client) under(ctx context.Context, op string, work Workload, name string, permits int, d time.Duration,
	do func(context.Context, func(context.Context) error) error) {
	asked := c.h.Now()
	var g Grant
	ran := false
	err := do(ctx, func(fctx context.Context) error {
		ran = true
		g = c.job(fctx, work, name, d)
		g.Asked, g.Permits = asked, permits
		return nil
	})
	c.ended(ctx, op, ran, &g, err)
}

// doOrSkip runs a short job under DoOrSkip.
func (c *client) doOrSkip(ctx context.Context) {
	name := c.pick(c.load.Names)
	var g Grant
	ran, err := c.rc.DoOrSkip(ctx, name, c.load.TTL, func(fctx context.Context) error {
		g = c.job(fctx, DoOrSkip, name, c.between(0, c.load.MaxHold))
		return nil
	})
	if !ran && err == nil {
		c.skips++
	}
	c.ended(ctx, "doorskip", ran, &g, err)
}

// job is fn of Do and DoOrSkip: it works for d or until its context ends,
// and returns its grant as fn saw it.
func (c *client) job(ctx context.Context, work Workload, name string, d time.Duration) Grant {
	g := Grant{Client: c.id, Workload: work, Name: name, Granted: c.h.Now(),
		FirstUntil: Never, Until: Never, Lost: Never, Margin: lossMargin(c.load.TTL)}
	l, known := lockInDo(ctx)
	if known {
		g.Token, g.Fence, g.FirstUntil = l.Token(), fenceOf(l), c.h.At(l.Until())
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
		at := c.h.Now()
		if errors.Is(context.Cause(ctx), redlock.ErrLockLost) {
			g.Lost = at
		}
	}
	if known {
		g.Until = c.h.At(l.Until())
	}
	g.Released = c.h.Now() // Do releases when fn returns
	return g
}

// ended records what a Do or DoOrSkip call did.
func (c *client) ended(ctx context.Context, op string, ran bool, g *Grant, err error) {
	if ran {
		c.h.Add(*g)
	}
	if err != nil && !errors.Is(err, redlock.ErrLockLost) { // a loss is in the grant
		c.fail(ctx, op, err)
	}
}

// granted starts the record of a lock just returned to the caller.
func (c *client) granted(l *redlock.Lock, work Workload) Grant {
	now := c.h.Now()
	return Grant{Client: c.id, Workload: work, Name: l.Name(), Token: l.Token(), Fence: fenceOf(l),
		Granted: now, FirstUntil: c.h.At(l.Until()), Until: Never, Released: Never, Lost: Never,
		Margin: lossMargin(c.load.TTL)}
}

// release releases l and records its grant: once per name for a set
// (perName).
func (c *client) release(l *redlock.Lock, g *Grant) {
	g.Until = c.h.At(l.Until())
	g.Released = c.h.Now()
	ctx, cancel := context.WithTimeout(context.Background(), releaseTimeout)
	defer cancel()
	err := l.Release(ctx)
	for _, r := range perName(*g, lockNames(l), func(n string) uint64 { return fenceOfName(l, n) }) {
		c.h.Add(r)
	}
	// A lock that ran out is not held any more: that is in the grant.
	if err != nil && !errors.Is(err, redlock.ErrNotHeld) {
		c.failures["release"]++
	}
}

// fail counts a failed operation, unless the run was ending.
func (c *client) fail(ctx context.Context, op string, err error) {
	if ctx.Err() != nil {
		return
	}
	kind := op
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		kind += ": timed out"
	case errors.Is(err, redlock.ErrNotAcquired):
		kind += ": not acquired"
	}
	c.failures[kind]++
}

func (c *client) pick(names []string) string { return names[c.rng.IntN(len(names))] }

// between draws a duration uniformly from [lo, hi].
func (c *client) between(lo, hi time.Duration) time.Duration {
	if hi <= lo {
		return lo
	}
	return lo + time.Duration(c.rng.Int64N(int64(hi-lo)+1))
}

// sleep waits for d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

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

// The workload of locks taken several names at once (AcquireAll): its
// clients take random pairs and triples of the load's SetNames, which
// overlap and name their common names in different orders, hold them
// briefly and release them, through their own paths to the same faulted
// nodes as every other client. Every set client fences (setClientOptions),
// so that each name's tokens can be checked in grant order.

// acquireAll takes a set of two or three names, holds it briefly (as
// acquire holds a lock) and releases it; it stops holding as soon as it
// hears the set is lost. Its grant is recorded once per name (perName).
func (c *client) acquireAll(ctx context.Context) {
	names := c.pickSet(c.load.SetNames)
	l, g, ok := c.take(ctx, "acquireall", AcquireAll, func(ctx context.Context) (*redlock.Lock, error) {
		return c.rc.AcquireAll(ctx, names, c.load.TTL)
	})
	if !ok {
		return
	}
	c.hold(l, &g, c.careful(l, c.load.MaxHold), ctx.Done())
	c.release(l, &g)
}

// pickSet draws two or three distinct names of names (fewer when there are
// fewer), in a random order: sets of six names overlap often, and two sets
// name their common names in either order, which must not deadlock.
func (c *client) pickSet(names []string) []string {
	k := min(2+c.rng.IntN(2), len(names))
	set := make([]string, k)
	for i, j := range c.rng.Perm(len(names))[:k] {
		set[i] = names[j]
	}
	return set
}

// perName returns the records of g, a grant of the lock whose names are
// names: g itself for a lock of one name (or a primitive), and for a set
// one copy of g per name, with that name, its fencing token (fenceOf) and
// the set's names (Grant.Set). The checkers work name by name, so a
// set's records are checked against every other hold of each of its
// names exactly as separate locks would be: no second checker for sets.
func perName(g Grant, names []string, fenceOf func(string) uint64) []Grant {
	if len(names) <= 1 {
		return []Grant{g}
	}
	records := make([]Grant, len(names))
	for i, n := range names {
		r := g
		r.Name, r.Fence, r.Set = n, fenceOf(n), names
		records[i] = r
	}
	return records
}
