package redlock

import (
	"context"
	"fmt"
	"hash/fnv"
	"slices"
	"time"

	"github.com/goredlock/goredlock/internal/check"
	"github.com/goredlock/goredlock/internal/layout"
	"github.com/goredlock/goredlock/keyserver"
)

// Status is what Client.Inspect read under one name, for its lock,
// semaphore, read-write lock and election alike.
type Status struct {
	// Name is the name inspected, without the client's key prefix.
	Name string
	// View is the quorum's verdict (see Client.Inspect for its rules).
	View
	// Servers holds one ServerStatus per server, in the order given to New.
	Servers []ServerStatus
}

// ServerStatus is what one server holds under the name.
type ServerStatus struct {
	// Err is why the server could not tell: it failed, did not answer in
	// time, or does not implement keyserver.Inspector (an error matching
	// keyserver.ErrPermanent). The View is zero then.
	Err error
	// View is what the server holds.
	View
}

// View is a name's holds, on one server or as a quorum holds them.
// Holders are named by a tag, never by their token, which releases the
// lock: a call's 8 random hexadecimal digits (for other tokens "#" and a
// hash). Different tags are different calls; a tag releases nothing.
type View struct {
	// Held reports that the lock is held: on a server, that its key holds
	// a token (or is promised to a waiter, which holds it next); as the
	// verdict, that a quorum holds it with one token.
	Held bool
	// Holder is the lock holder's tag; "" when not held.
	Holder string
	// Left is the TTL the lock has left: on a server, its key's; as the
	// verdict, how long a quorum holds it unextended. Negative for a key
	// stored without a TTL (not by this module).
	Left time.Duration
	// Waiters counts the calls waiting in the lock's line.
	Waiters int
	// Fence is the lock's fence counter: the latest fencing token drawn
	// (0 when the name was never taken WithFencing).
	Fence uint64
	// DelayLeft is how long the lock-delay (WithLockDelay) keeps the name
	// ungranted after a holder let it expire, as the inspecting Client's
	// own lock-delay reads the key; 0 when none is in force.
	DelayLeft time.Duration

	// Semaphore is the semaphore called name.
	Semaphore SemaphoreView
	// RW is the read-write lock called name.
	RW RWView
	// Election is the election called name.
	Election ElectionView
}

// SemaphoreView is a semaphore's holds.
type SemaphoreView struct {
	Permits int // the permit count its holders gave; 0 when none is held
	InUse   int // permits held
	Waiters int // calls waiting for a permit
	// Truncated reports, in the verdict, that a server held more permits
	// than it lists (keyserver.MaxInspected, lowest slots first): InUse is
	// then the least number in use, those a quorum holds among the listed.
	// A server's own InUse counts all it holds; its Truncated is false.
	Truncated bool
}

// RWView is a read-write lock's holds.
type RWView struct {
	Readers       int    // read holds
	Writer        string // the writer's tag; "" when none holds it
	WriterWaiting bool   // a writer waits, and keeps new readers out
	Waiters       int    // calls waiting for a read or write hold
	// Truncated is SemaphoreView.Truncated for read holds: Readers is then
	// the least number held.
	Truncated bool
}

// ElectionView is an election's leader.
type ElectionView struct {
	Leader string        // the leader's value (Campaign's); "" when none leads
	Left   time.Duration // the TTL the leadership has left
	Term   uint64        // the latest leader's term (its Lock's Fence)
}

// Inspect reads what the servers hold under name, for people and scripts
// that ask who holds what and who waits (the redlock command's status). It
// writes nothing and reads each server once, bounded by the server timeout
// (500 ms by default); a server that is no keyserver.Inspector is reported
// in its ServerStatus, not asked. Two servers that reach one store fail it
// with ErrInvalidArgument.
//
// The verdict is a quorum's: a lock, writer or leader is held when a
// quorum holds it with one token, a permit or read hold when a quorum holds
// its token, and Left is how long that quorum holds it. Waiters and Permits
// are the largest number a quorum reports at least (0 when fewer than a
// quorum answered), InUse and Readers count the holds a quorum holds among
// those listed (see Truncated), WriterWaiting needs a quorum, Fence and
// Term are the largest counters reported (the latest when a quorum
// answered), and DelayLeft is how long until the lock-delay no longer
// keeps a quorum from granting. The servers keep no record of a
// lock-delay: Inspect splits a key's TTL by the Client's own
// WithLockDelay, so use the holders' ("Lock-delay" in docs/design.md).
//
// When the servers that failed could change the verdict, Inspect returns
// the Status of those that answered with a *QuorumError; what a quorum
// holds is held all the same.
func (c *Client) Inspect(ctx context.Context, name string) (Status, error) {
	if err := checkName("", name); err != nil {
		return Status{}, err
	}
	if err := c.enter(); err != nil {
		return Status{}, err
	}
	defer c.exit()
	key := c.options.keyPrefix + name
	keys := keyserver.NameKeys{Lock: key, Semaphore: layout.SemaphoreKey(key), RW: layout.RWKey(key), Election: layout.ElectionKey(key)}
	r := newAnswers(len(c.servers), func(ctx context.Context, i int, ks keyserver.KeyServer) (keyserver.NameStatus, error) {
		in, ok := ks.(keyserver.Inspector)
		if !ok { // a server past the 63rd, which shares its bit with one that can
			return keyserver.NameStatus{}, check.Permanent(fmt.Errorf("key server %d does not implement keyserver.Inspector", i))
		}
		return in.Inspect(ctx, keys)
	})
	st := Status{Name: name, Servers: make([]ServerStatus, len(c.servers))}
	// Only the keyserver.Inspectors are asked (see fan.only): the others'
	// refusal says nothing of their health, and their status says why.
	var only uint64
	for i, s := range c.servers {
		if _, ok := s.(keyserver.Inspector); ok {
			only |= bit(i)
		} else {
			st.Servers[i].Err = check.Permanent(fmt.Errorf("key server %s does not implement keyserver.Inspector", serverName(c.servers, i)))
		}
	}
	var t tally
	if only != 0 {
		if only == ^uint64(0)>>(64-min(len(c.servers), 64)) {
			only = 0 // every server: no bit stands for a server it must not ask
		}
		var err error
		t, err = c.read(ctx, fan{op: opRead, name: name, key: key, timeout: c.readTimeout(), rule: everyAnswer, read: r, only: only})
		if err != nil {
			return Status{}, err
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	answered := make([]keyserver.NameStatus, 0, len(c.servers))
	var failedErrs []*ServerError
	var delays []time.Duration
	for i := range c.servers {
		ss := &st.Servers[i]
		if ss.Err == nil { // else not asked
			if ok, err := t.answerOf(i); !ok && err != nil {
				ss.Err = err
			} else if !ok {
				ss.Err = fmt.Errorf("key server %s did not answer", serverName(c.servers, i))
			}
		}
		if ss.Err != nil {
			failedErrs = append(failedErrs, &ServerError{Server: i, Err: ss.Err})
			continue
		}
		got := r.got[i]
		delay := splitDelay(&got, c.options.lockDelay)
		ss.View = serverView(got)
		ss.DelayLeft = delay
		answered = append(answered, got)
		delays = append(delays, delay)
	}
	v, undecided := verdict(answered, len(c.servers), c.quorum)
	// A grant needs a quorum of servers out of their delay: it waits
	// while more than n-quorum are in it.
	v.DelayLeft = atLeast(delays, len(c.servers)-c.quorum+1)
	st.View = v
	if undecided {
		qt := tally{n: len(c.servers), granted: len(answered), errs: failedErrs}
		return st, newQuorumError("inspect", lockKind, name, 1, qt, ctx.Err())
	}
	return st, nil
}

// tag names the holder of token without giving its token away (see View).
func tag(token string) string {
	if token == "" {
		return ""
	}
	if layout.RankOf(token) != "" {
		return token[17:layout.RankLen] // the call's random digits
	}
	h := fnv.New32a()
	h.Write([]byte(token))
	return fmt.Sprintf("#%08x", h.Sum32())
}

// serverView is one server's answer as a View.
func serverView(s keyserver.NameStatus) View {
	return View{
		Held: s.Lock.Token != "", Holder: tag(s.Lock.Token), Left: s.Lock.Left,
		Waiters: s.Waiters, Fence: s.Fence,
		Semaphore: SemaphoreView{Permits: s.Permits, InUse: max(s.SlotsHeld, len(s.Slots)), Waiters: s.PermitWaiters},
		RW:        RWView{Readers: max(s.ReadersHeld, len(s.Readers)), Writer: tag(s.Writer.Token), WriterWaiting: s.WriterWaiting, Waiters: s.RWWaiters},
		Election:  ElectionView{Leader: s.Leader.Value, Left: s.Leader.Left, Term: s.Term},
	}
}

// holders counts, per token, the servers that hold it in one role, with
// the TTL each reports.
type holders map[string][]time.Duration

func (h holders) add(hds ...keyserver.Hold) {
	for _, hd := range hds {
		if hd.Token != "" {
			h[hd.Token] = append(h[hd.Token], hd.Left)
		}
	}
}

// held returns the tokens that a quorum holds, in no order.
func (h holders) held(quorum int) []string {
	var ts []string
	for t, lefts := range h {
		if len(lefts) >= quorum {
			ts = append(ts, t)
		}
	}
	return ts
}

// undecided reports whether the failed servers could give a token that
// does not hold a quorum one (also a token no answer shows).
func (h holders) undecided(quorum, failed int) bool {
	if failed >= quorum {
		return true
	}
	for _, lefts := range h {
		if len(lefts) < quorum && len(lefts)+failed >= quorum {
			return true
		}
	}
	return false
}

// single is the one token of h that a quorum holds (a lock, a writer, a
// leader: two quorums share a server, which holds one token), and how
// long that quorum holds it.
func (h holders) single(quorum int) (string, time.Duration) {
	for _, t := range h.held(quorum) {
		return t, leftOf(h[t], quorum)
	}
	return "", 0
}

// leftOf is how long a quorum of the TTLs lefts lasts: the quorum-th
// longest, a TTL-less key (negative) counting as the longest.
func leftOf(lefts []time.Duration, quorum int) time.Duration {
	s := slices.Clone(lefts)
	slices.SortFunc(s, func(a, b time.Duration) int {
		switch {
		case a == b:
			return 0
		case a < 0 || (b >= 0 && a > b):
			return -1
		}
		return 1
	})
	return s[quorum-1]
}

// atLeast is the largest value that k of vals are at least (the k-th
// largest); zero when there are fewer than k.
func atLeast[T int | time.Duration](vals []T, k int) T {
	if k < 1 || len(vals) < k {
		return 0
	}
	s := slices.Clone(vals)
	slices.Sort(s)
	return s[len(s)-k]
}

// verdict is the quorum's View of the answers of n servers, and whether
// the servers that failed could change who holds what.
func verdict(answered []keyserver.NameStatus, n, quorum int) (View, bool) {
	failed := n - len(answered)
	lock, permits, readers, writer, leader := holders{}, holders{}, holders{}, holders{}, holders{}
	values := map[string]string{} // leader token → value
	var waiters, semPerms, semWaiters, rwWaiters, writerWaits []int
	var v View
	var slotsCut, readersCut bool // a server held more than it listed
	for _, s := range answered {
		slotsCut = slotsCut || s.SlotsHeld > len(s.Slots)
		readersCut = readersCut || s.ReadersHeld > len(s.Readers)
		lock.add(s.Lock)
		permits.add(s.Slots...)
		readers.add(s.Readers...)
		writer.add(s.Writer)
		leader.add(keyserver.Hold{Token: s.Leader.Token, Left: s.Leader.Left})
		if s.Leader.Token != "" {
			values[s.Leader.Token] = s.Leader.Value
		}
		waiters = append(waiters, s.Waiters)
		semPerms = append(semPerms, s.Permits)
		semWaiters = append(semWaiters, s.PermitWaiters)
		rwWaiters = append(rwWaiters, s.RWWaiters)
		if s.WriterWaiting {
			writerWaits = append(writerWaits, 1)
		}
		v.Fence = max(v.Fence, s.Fence)
		v.Election.Term = max(v.Election.Term, s.Term)
	}
	var token string
	token, v.Left = lock.single(quorum)
	v.Held, v.Holder = token != "", tag(token)
	v.Waiters = atLeast(waiters, quorum)
	v.Semaphore = SemaphoreView{Permits: atLeast(semPerms, quorum), InUse: len(permits.held(quorum)), Waiters: atLeast(semWaiters, quorum),
		Truncated: slotsCut}
	w, _ := writer.single(quorum)
	v.RW = RWView{Readers: len(readers.held(quorum)), Writer: tag(w), WriterWaiting: len(writerWaits) >= quorum, Waiters: atLeast(rwWaiters, quorum),
		Truncated: readersCut}
	var l string
	l, v.Election.Left = leader.single(quorum)
	v.Election.Leader = values[l]
	// A lock, writer or leader that a quorum holds is decided: any other
	// quorum shares a server with it, which holds its token.
	undecided := slices.ContainsFunc([]holders{lock, permits, readers, writer, leader}, func(h holders) bool {
		return h.undecided(quorum, failed)
	})
	return v, undecided
}
