package redlock

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/goredlock/goredlock/internal/layout"
	"github.com/goredlock/goredlock/keyserver"
)

// MaxNames bounds the names of one AcquireAll: each server takes them all
// in one step, and every call of the lock carries them.
const MaxNames = 64

// AcquireAll takes the locks called names, all of them or none, as one
// Lock that holds the set (Names lists it, FenceOf gives each name's
// fencing token). Each server takes the set in one step, so calls for
// overlapping sets cannot deadlock, whatever their order ("Several names
// without deadlock" in docs/design.md). Quorum, validity and retries are
// Acquire's. Names are deduplicated, at most MaxNames; one name is
// Acquire. Every server must implement keyserver.SetLocker; on a Redis
// Cluster the names must share a hash slot.
func (c *Client) AcquireAll(ctx context.Context, names []string, ttl time.Duration, opts ...Option) (l *Lock, err error) {
	return c.acquireAllAs(ctx, "acquire_all", names, ttl, waits, opts)
}

// TryAcquireAll makes a single attempt to take every lock of names:
// AcquireAll with no retries.
func (c *Client) TryAcquireAll(ctx context.Context, names []string, ttl time.Duration, opts ...Option) (l *Lock, err error) {
	return c.acquireAllAs(ctx, "try_acquire_all", names, ttl, once, opts)
}

// DoAll runs fn while holding every lock of names, taken as AcquireAll
// takes them, as Do runs fn under one lock.
func (c *Client) DoAll(ctx context.Context, names []string, ttl time.Duration, fn func(context.Context) error, opts ...Option) (err error) {
	_, err = c.doAll(ctx, "do_all", names, ttl, fn, waits, opts)
	return err
}

// DoAllOrSkip is DoOrSkip for a set of names: it skips, returning
// ran=false and err=nil, when a quorum of servers answers that another
// token holds one of them.
func (c *Client) DoAllOrSkip(ctx context.Context, names []string, ttl time.Duration, fn func(context.Context) error, opts ...Option) (ran bool, err error) {
	return c.doAll(ctx, "do_all_or_skip", names, ttl, fn, skips, opts)
}

// Names returns every name the lock holds: the one of Acquire, or the set
// of AcquireAll in the order given, without duplicates.
func (l *Lock) Names() []string {
	if l.zero() {
		return nil
	}
	if s := l.kind.several(); s != nil {
		return slices.Clone(s.names)
	}
	return []string{l.name}
}

// FenceOf returns the fencing token of one of the lock's names (see
// Fence), 0 without fencing or for a name the lock does not hold.
func (l *Lock) FenceOf(name string) uint64 {
	if l.zero() {
		return 0
	}
	if s := l.kind.several(); s != nil {
		if i := slices.Index(s.names, name); i >= 0 && s.fences != nil {
			return s.fences[i]
		}
	} else if name == l.name {
		return l.fence
	}
	return 0
}

// acquireAllAs is AcquireAll and TryAcquireAll, reported to hooks as op.
func (c *Client) acquireAllAs(ctx context.Context, op string, names []string, ttl time.Duration, m mode, opts []Option) (l *Lock, err error) {
	names, err = c.checkNames(names)
	if err != nil {
		return nil, err
	}
	display := setName(names)
	ctx = c.callBegins(ctx, op, display)
	defer func() { c.callEnds(ctx, op, display, err) }()
	o, _, err := c.setOptions(names, display, ttl, opts)
	if err != nil {
		return nil, err
	}
	return c.acquireSet(ctx, o, names, display, ttl, m)
}

// doAll is DoAll and DoAllOrSkip.
func (c *Client) doAll(ctx context.Context, op string, names []string, ttl time.Duration, fn func(context.Context) error, m mode,
	opts []Option) (ran bool, err error) {
	names, err = c.checkNames(names)
	if err != nil {
		return false, err
	}
	display := setName(names)
	ctx = c.callBegins(ctx, op, display)
	defer func() { c.callEnds(ctx, op, display, err) }()
	o, k, err := c.setOptions(names, display, ttl, opts)
	if err != nil {
		return false, err
	}
	return c.doWith(ctx, o, k, display, ttl, fn, func(o *options) (*Lock, error) {
		return c.acquireSet(ctx, o, names, display, ttl, m)
	})
}

// setOptions resolves the options of a call on the checked names, called
// display, and checks its TTL, before any server is asked; it returns the
// kind the names make: one name is a lock.
func (c *Client) setOptions(names []string, display string, ttl time.Duration, opts []Option) (*options, kindName, error) {
	k := setKind
	if len(names) == 1 {
		k = lockKind
	}
	o, err := c.options.with(opts)
	if err != nil {
		return nil, k, err
	}
	if err := checkTTL(o, k, display, ttl); err != nil {
		return nil, k, err
	}
	return o, k, nil
}

// acquireSet takes the set of names, called display, or the lock of one
// name, once setOptions has checked them.
func (c *Client) acquireSet(ctx context.Context, o *options, names []string, display string, ttl time.Duration, m mode) (*Lock, error) {
	if len(names) == 1 {
		return c.acquireHold(ctx, o, display, o.keyPrefix+display, ttl, m, false, lockOps{})
	}
	if err := checkServers(c.servers, "AcquireAll", "SetLocker", implements[keyserver.SetLocker]); err != nil {
		return nil, err
	}
	so := &setOps{nameSet: nameSet{names: names, keys: make([]string, len(names))}}
	for i, n := range names {
		so.keys[i] = o.keyPrefix + n
	}
	// In-process, one queue per set: its keys, sorted and joined, name it.
	sorted := slices.Clone(so.keys)
	slices.Sort(sorted)
	key := strings.Join(sorted, "\x00")
	return c.acquireHold(ctx, o, display, key, ttl, m, false, so)
}

// checkNames validates the names of a set and drops duplicates, keeping
// the first of each.
func (c *Client) checkNames(names []string) ([]string, error) {
	if len(names) == 0 {
		return nil, invalidArgument("no lock names")
	}
	seen := make(map[string]bool, len(names))
	out := make([]string, 0, len(names))
	for _, n := range names {
		if err := checkName("lock", n); err != nil {
			return nil, err
		}
		if !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	if len(out) > MaxNames {
		return nil, invalidArgument("%d lock names in a set: at most %d", len(out), MaxNames)
	}
	return out, nil
}

// setName is how logs, errors and hooks name a set.
func setName(names []string) string { return strings.Join(names, ",") }

// setOps is the set of locks that AcquireAll takes: every key in one call
// per server ("The kinds" in docs/design.md).
type setOps struct {
	primitive
	nameSet
}

// nameSet is what a hold of several names keeps of them.
type nameSet struct {
	names, keys []string // the keys by name
	fences      []uint64 // by name, drawn for the grant before its Lock is handed over; nil unfenced
	lines       struct {
		once sync.Once
		keys []string // the keys' lines (layout.LineKey), for a started release
	}
}

func (so *setOps) name() kindName    { return setKind }
func (so *setOps) attempt() holdKind { return so }
func (so *setOps) together() int     { return 1 }
func (so *setOps) traits() traits    { return setTraits }
func (so *setOps) several() *nameSet { return &so.nameSet }

// lineKeys returns the lines of the set's keys, made once for the calls
// of every server.
func (s *nameSet) lineKeys() []string {
	s.lines.once.Do(func() {
		s.lines.keys = make([]string, len(s.keys))
		for i, k := range s.keys {
			s.lines.keys[i] = layout.LineKey(k)
		}
	})
	return s.lines.keys
}

func (so *setOps) call(ctx context.Context, f fan, _ int, ks keyserver.KeyServer) (ok bool, _ uint64, h keyserver.Holder, err error) {
	sl := ks.(keyserver.SetLocker)
	_, lines := ks.(keyserver.Notifier)
	switch f.op {
	case opAcquireInLine, opAcquire:
		acquire := sl.AcquireAll
		if f.op == opAcquireInLine && lines {
			acquire = sl.AcquireAllInLine
		}
		ok, h, err = acquire(ctx, so.keys, f.token, f.ttl)
	case opLeaveLine:
		if lines {
			err = sl.LeaveLines(ctx, so.keys, f.token)
		}
		ok = err == nil
	case opExtend:
		ok, err = sl.ExtendAll(ctx, so.keys, f.token, f.ttl)
	default:
		ok, err = sl.ReleaseAll(ctx, so.keys, f.token)
	}
	return ok, 0, h, err
}

// errNoWatch is a set's watch on a server that promised it every key:
// nothing to wait for there.
var errNoWatch = fmt.Errorf("no watch")

// watch watches token's turn in the lines of the set's keys on ks,
// but not of those already promised to it (bit i of promised), whose
// watch would fire at once; the first turn wakes the set.
func (so *setOps) watch(ctx context.Context, ks keyserver.KeyServer, _, token string, promised uint64) ([]<-chan struct{}, func(), error) {
	ns := ks.(keyserver.Notifier)
	var (
		turns []<-chan struct{}
		stops []func()
	)
	stopAll := func() {
		for _, stop := range stops {
			stop()
		}
	}
	for i, k := range so.keys {
		if promised&bit(i) != 0 {
			continue
		}
		turn, stop, err := ns.WatchTurn(ctx, k, token)
		if err != nil {
			stopAll()
			return nil, nil, err
		}
		turns, stops = append(turns, turn), append(stops, stop)
	}
	if len(turns) == 0 {
		return nil, nil, errNoWatch // every key is promised to it: nothing to wait for here
	}
	return turns, stopAll, nil
}
