package redlock

import (
	"context"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/goredlock/goredlock/internal/layout"
	"github.com/goredlock/goredlock/keyserver"
)

// Semaphore lets at most permits holders of a name hold it at once, with
// the fault tolerance of a lock ("The semaphore bound" in docs/design.md).
// Get one with Client.Semaphore; it is safe for concurrent use.
type Semaphore struct {
	c       *Client
	name    string
	permits int
	err     error // a bad name or count, reported by every method
}

// Semaphore returns the semaphore called name with permits permits. Every
// server must implement keyserver.HoldKeeper; permits < 1, an empty name
// or a server that does not makes every method fail with
// ErrInvalidArgument before any server is asked. While the servers hold
// another count, a call fails with an error matching
// keyserver.ErrPermitsDiffer: until every permit is released, or, on Redis
// beyond 1,024 permits, until the count lapses a TTL later ("The permit
// count" in docs/design.md).
func (c *Client) Semaphore(name string, permits int) *Semaphore {
	s := &Semaphore{c: c, name: name, permits: permits}
	switch {
	case permits < 1:
		s.err = invalidArgument("semaphore %q with %d permits: it needs at least 1", name, permits)
	case name == "":
		s.err = invalidArgument("empty semaphore name")
	default:
		s.err = checkServers(c.servers, "a semaphore", "HoldKeeper", implements[keyserver.HoldKeeper])
	}
	return s
}

// Acquire takes a permit for ttl, waiting while all are held as
// Client.Acquire waits for a lock. The *Lock it returns is the permit;
// its methods work as a lock's.
func (s *Semaphore) Acquire(ctx context.Context, ttl time.Duration, opts ...Option) (l *Lock, err error) {
	return s.take(ctx, "semaphore_acquire", ttl, waits, false, nil, opts)
}

// TryAcquire makes one attempt to take a permit; it fails at once with an
// error matching ErrHeldElsewhere when all permits are held. (It may ask
// the servers up to three times when they report a permit free that
// another caller then takes first.)
func (s *Semaphore) TryAcquire(ctx context.Context, ttl time.Duration, opts ...Option) (l *Lock, err error) {
	return s.take(ctx, "semaphore_try_acquire", ttl, once, false, nil, opts)
}

// Do runs fn while holding a permit, as Client.Do runs fn under a lock:
// kept alive while fn runs, fn's context cancelled if it is lost,
// released when fn returns.
func (s *Semaphore) Do(ctx context.Context, ttl time.Duration, fn func(context.Context) error, opts ...Option) (err error) {
	_, err = s.take(ctx, "semaphore_do", ttl, waits, true, fn, opts)
	return err
}

func (s *Semaphore) take(ctx context.Context, op string, ttl time.Duration, m mode, do bool, fn func(context.Context) error,
	opts []Option) (*Lock, error) {
	return s.c.takeHold(ctx, op, permitKind, s.name, s.err, ttl, m, do, fn, opts, func(o *options) (string, holdKind) {
		po := s.newPick(o)
		return po.key, po
	})
}

func (s *Semaphore) key(o *options) string { return layout.SemaphoreKey(o.keyPrefix + s.name) }

// newPick returns the permit of one call, before its first attempt: a
// slot at random, so that callers spread over the free slots.
func (s *Semaphore) newPick(o *options) *permitOps {
	return &permitOps{permits: s.permits, next: rand.IntN(s.permits), key: s.key(o), asked: &s.c.asked}
}

// asked counts, by semaphore key, the slots that a client's attempts ask
// for until their votes decide, so that an attempt asks for one no other
// asks for: two would split the servers ("Slots" in docs/design.md).
type asked struct {
	mu    sync.Mutex
	slots map[string]map[int]int
}

// take counts an attempt on key asking for the first slot of want that no
// other asks for, else for want[0], and returns it.
func (a *asked) take(key string, want []int) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.slots == nil {
		a.slots = make(map[string]map[int]int)
	}
	on := a.slots[key]
	if on == nil {
		on = make(map[int]int)
		a.slots[key] = on
	}
	slot := want[0]
	for _, w := range want {
		if on[w] == 0 {
			slot = w
			break
		}
	}
	on[slot]++
	return slot
}

// drop ends an attempt's count of slot on key.
func (a *asked) drop(key string, slot int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	on := a.slots[key]
	if on[slot]--; on[slot] <= 0 {
		delete(on, slot)
	}
	if len(on) == 0 {
		delete(a.slots, key)
	}
}

// permitOps is a permit: the slot one attempt asks for, and the free slots
// its refusals reported, by server, from which the call picks its next
// attempt's slot (next, else one of others: see asked).
type permitOps struct {
	primitive
	permits, slot, next int
	others              []int // the other slots again found free
	key                 string
	asked               *asked
	mu                  sync.Mutex
	free                map[int][]int
}

func (po *permitOps) name() kindName { return permitKind }
func (po *permitOps) together() int  { return po.permits }

func (po *permitOps) attempt() holdKind {
	// Failing next, the other slots the refusals named free; with none
	// named, the few after next.
	want := append([]int{po.next}, po.others...)
	if len(po.others) == 0 {
		for i := 1; i <= min(po.permits-1, askedAround); i++ {
			want = append(want, (po.next+i)%po.permits)
		}
	}
	slot := po.asked.take(po.key, want)
	return &permitOps{permits: po.permits, slot: slot, next: slot, key: po.key, asked: po.asked, free: make(map[int][]int)}
}

// askedAround is how many slots after its pick an attempt may ask for
// instead (see asked) when no refusal named others: as many as a client's
// attempts on a few permits.
const askedAround = 4

func (po *permitOps) attempted() { po.asked.drop(po.key, po.slot) }

// again picks the next slot from the attempt's answers and reports
// whether it may be free on a quorum ("Slots" in docs/design.md); never the
// slot just asked for, whose undone grant is no sign its holder left.
func (po *permitOps) again(t tally) bool {
	po.mu.Lock()
	defer po.mu.Unlock()
	count := make(map[int]int)
	for _, free := range po.free {
		for _, slot := range free {
			if slot != po.slot {
				count[slot]++
			}
		}
	}
	q := quorum(t.n)
	unknown := max(t.n-len(po.free)-len(t.errs), 0)
	var sure, maybe []int
	for slot, n := range count {
		switch {
		case n >= q:
			sure = append(sure, slot)
		case n+unknown >= q:
			maybe = append(maybe, slot)
		}
	}
	if len(sure)+len(maybe) == 0 {
		po.next, po.others = rand.IntN(po.permits), nil
		return false
	}
	shuffle(sure)
	shuffle(maybe)
	all := append(sure, maybe...)
	po.next, po.others = all[0], all[1:]
	return true
}

func shuffle(slots []int) {
	rand.Shuffle(len(slots), func(i, j int) { slots[i], slots[j] = slots[j], slots[i] })
}

func (po *permitOps) watch(ctx context.Context, ks keyserver.KeyServer, key, token string, _ uint64) ([]<-chan struct{}, func(), error) {
	return watchHolds(ctx, ks, keyserver.HoldSpec{Kind: keyserver.PermitHold, Key: key, Token: token, Permits: po.permits, Slot: po.next})
}

func (po *permitOps) call(ctx context.Context, f fan, i int, ks keyserver.KeyServer) (bool, uint64, keyserver.Holder, error) {
	h := keyserver.HoldSpec{Kind: keyserver.PermitHold, Key: f.key, Token: f.token, Permits: po.permits, Slot: po.slot}
	if f.op != opAcquire {
		ok, _, err := holdCall(ctx, &f, ks, h)
		return ok, 0, keyserver.Holder{}, err
	}
	// Not through holdCall: one frame less on the stack of the call's
	// goroutine, which would otherwise grow.
	ok, p, err := ks.(keyserver.HoldKeeper).AcquireHold(ctx, h, f.ttl)
	if err == nil {
		po.mu.Lock()
		po.free[i] = p.Free
		po.mu.Unlock()
	}
	return ok, 0, keyserver.Holder{Left: p.Left}, err
}
