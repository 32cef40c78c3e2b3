// Package static is a scripted [keyserver.KeyServer] for unit tests of code
// that takes locks: each server answers from a script of replies (grant,
// deny, fail, hang, with or without latency) and keeps a log of the calls
// it received.
//
// With no script a [Server] is a working key server over its own in-process
// store, so a test scripts only the calls it cares about. A test of a job
// that must not run when the lock is held elsewhere:
//
//	servers := static.Table([][]bool{{false, false}, {false, false}, {true, true}})
//	client, _ := redlock.New(servers.KeyServers(), redlock.WithRetryCount(0))
//	ran, err := nightly.Run(ctx, client) // calls client.DoOrSkip
//	// want ran == false, err == nil; servers[2].Count(static.OpRelease) == 1
//
// Failures are scripted the same way: [Fail](err) answers with an
// error, [Hang] blocks until the caller's context ends, [Reply].Delay adds
// latency that honours the context.
//
// A Server is a [keyserver.Notifier]. AcquireOrHolder and AcquireInLine
// follow OpAcquire's script (Reply.Left and Reply.Rank describe the holder
// they report), WatchTurn follows OpWatch's and LeaveLine OpLeaveLine's;
// answered from the store, they wait in the store's line. A watch is woken
// by its turn in the store's line, by a scripted Release that answers true,
// by [Server.Wake], or by [Server.Break], which ends every watch as a lost
// connection would. WatchContention follows OpWatchContention's script
// and watches the store's line: a waiter that the store put in line tells
// it, a scripted refusal does not.
package static

import (
	"context"
	"sync"
	"time"

	"github.com/goredlock/goredlock/keyserver"
	"github.com/goredlock/goredlock/keyserver/memory"
)

// Op names a KeyServer operation.
type Op string

// The operations a Server logs and scripts.
const (
	OpAcquire    Op = "acquire" // also AcquireFenced
	OpExtend     Op = "extend"
	OpRelease    Op = "release"
	OpRaiseFence Op = "raise-fence"
	OpWatch      Op = "watch"      // WatchTurn: only Err, Delay and Block of its replies count
	OpLeaveLine  Op = "leave-line" // only Err, Delay and Block of its replies count
	// OpWatchContention is WatchContention: only Err, Delay and Block of
	// its replies count.
	OpWatchContention Op = "watch-contention"
)

// Reply is one scripted answer.
type Reply struct {
	// OK and Err are returned as the call's result.
	OK  bool
	Err error
	// Delay is waited before answering; if the context ends first, the call
	// returns the context's error.
	Delay time.Duration
	// Block makes the call wait until its context ends and return the
	// context's error, like a server that stopped answering.
	Block bool
	// Store answers from the server's own key store instead of OK and Err;
	// with Err too, the store answers and then the call fails with Err, as
	// a server whose answer was lost after it stored (see Keys).
	Store bool
	// Keys, with Store and Err, makes a set's AcquireAll or ExtendAll keep
	// only the first Keys keys it stored before it fails: a server failing
	// between the keys of one call. 0 keeps them all.
	Keys int
	// Fence is the fence counter a scripted AcquireFenced reads, or the
	// previous counter a scripted RaiseFence reports.
	Fence uint64
	// Left and Rank describe the holder a scripted AcquireOrHolder reports
	// with a refusal: its key's remaining TTL, and how it ranks against
	// the caller (keyserver.Holder's Rank: -1 the holder first, +1 the
	// caller, 0 unranked).
	Left  time.Duration
	Rank  int
	Ahead int // waiters before the caller, for a scripted AcquireInLine
}

// Common replies.
var (
	Grant     = Reply{OK: true}    // the key now holds the caller's token
	Deny      = Reply{}            // another token holds the key
	Hang      = Reply{Block: true} // no answer until the context ends
	FromStore = Reply{Store: true} // whatever the real store says
)

// Fail returns a reply that answers with err.
func Fail(err error) Reply { return Reply{Err: err} }

// Call is one logged call.
type Call struct {
	Op    Op            // the operation called
	Key   string        // the key the server was given
	Token string        // the caller's token; "" for a call that has none (OpRaiseFence, reads, watches of a key)
	TTL   time.Duration // zero for OpRelease and OpRaiseFence
	Fence uint64        // the fence OpRaiseFence was asked to set
	// OK and Err are the answer given; Done is false while the call is
	// still waiting (a Delay or Block reply).
	OK   bool
	Err  error
	Done bool
}

// Server is a scripted KeyServer. It is safe for concurrent use.
type Server struct {
	store *memory.Server

	mu      sync.Mutex
	scripts map[Op][]Reply
	next    map[Op]int
	before  func(context.Context, Call)
	calls   []Call
	watches map[string]map[*watch]struct{} // by key, until stopped (notify.go)
	// incarnation, if set, answers Incarnation (incarnation.go).
	incarnation func() (keyserver.Incarnation, error)
}

var (
	_ keyserver.Fencer   = (*Server)(nil)
	_ keyserver.Notifier = (*Server)(nil)
)

// Option configures a Server.
type Option func(*Server)

// WithAcquire scripts Acquire; see Server.Script.
func WithAcquire(replies ...Reply) Option { return func(s *Server) { s.Script(OpAcquire, replies...) } }

// WithExtend scripts Extend; see Server.Script.
func WithExtend(replies ...Reply) Option { return func(s *Server) { s.Script(OpExtend, replies...) } }

// WithRelease scripts Release; see Server.Script.
func WithRelease(replies ...Reply) Option { return func(s *Server) { s.Script(OpRelease, replies...) } }

// WithBefore calls fn at the start of every call, before the reply is
// chosen. Tests use it to move a fake clock while a call is in flight, or to
// coordinate with other goroutines.
func WithBefore(fn func(ctx context.Context, c Call)) Option {
	return func(s *Server) { s.before = fn }
}

// WithNow sets the time source of the server's own store, for tests that
// expire keys with a fake clock.
func WithNow(now func() time.Time) Option {
	return func(s *Server) { s.store = memory.New(memory.WithSweepInterval(0), memory.WithNow(now)) }
}

// New returns a Server that answers every call from its own store until
// scripted otherwise.
func New(opts ...Option) *Server {
	s := &Server{
		store:   memory.New(memory.WithSweepInterval(0)),
		scripts: make(map[Op][]Reply),
		next:    make(map[Op]int),
		watches: make(map[string]map[*watch]struct{}),
	}
	for _, o := range opts {
		o(s)
	}
	return s
}

// Fixed returns a Server whose Acquire and Extend always answer acquire and
// whose Release always answers release.
func Fixed(acquire, release bool) *Server {
	return New(
		WithAcquire(Reply{OK: acquire}),
		WithExtend(Reply{OK: acquire}),
		WithRelease(Reply{OK: release}),
	)
}

// Script sets the replies to op's next calls, in order; once they are used
// up, the last one repeats. No replies means answering from the store.
// Script may be called while calls are in flight.
func (s *Server) Script(op Op, replies ...Reply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.scripts[op] = append([]Reply(nil), replies...)
	s.next[op] = 0
}

// Calls returns a copy of the log of calls, in the order they started.
func (s *Server) Calls() []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Call(nil), s.calls...)
}

// Count returns how many calls of op have started.
func (s *Server) Count(op Op) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, c := range s.calls {
		if c.Op == op {
			n++
		}
	}
	return n
}

// Acquire answers from the script, or else from the store.
func (s *Server) Acquire(ctx context.Context, key, token string, ttl time.Duration) (bool, error) {
	_, ok, err := s.call(ctx, Call{Op: OpAcquire, Key: key, Token: token, TTL: ttl}, s.store.Acquire)
	return ok, err
}

// Extend answers from the script, or else from the store.
func (s *Server) Extend(ctx context.Context, key, token string, ttl time.Duration) (bool, error) {
	_, ok, err := s.call(ctx, Call{Op: OpExtend, Key: key, Token: token, TTL: ttl}, s.store.Extend)
	return ok, err
}

// AcquireFenced answers as Acquire does, with OpAcquire's script, and reads
// the fence counter from the reply's Fence, or else from the store.
func (s *Server) AcquireFenced(ctx context.Context, key, token string, ttl time.Duration) (bool, uint64, error) {
	var fence uint64
	r, ok, err := s.call(ctx, Call{Op: OpAcquire, Key: key, Token: token, TTL: ttl}, func(ctx context.Context, key, token string, ttl time.Duration) (bool, error) {
		ok, f, err := s.store.AcquireFenced(ctx, key, token, ttl)
		fence = f
		return ok, err
	})
	if !r.Store {
		fence = r.Fence
	}
	return ok, fence, err
}

// RaiseFence answers from OpRaiseFence's script (the reply's Fence is the
// previous counter reported), or else from the store.
func (s *Server) RaiseFence(ctx context.Context, key string, fence uint64) (uint64, error) {
	var prev uint64
	r, _, err := s.call(ctx, Call{Op: OpRaiseFence, Key: key, Fence: fence}, func(ctx context.Context, key, _ string, _ time.Duration) (bool, error) {
		p, err := s.store.RaiseFence(ctx, key, fence)
		prev = p
		return err == nil, err
	})
	if !r.Store {
		prev = r.Fence
	}
	return prev, err
}

// Release answers from the script, or else from the store. A scripted
// Release that answers true wakes every watch of key; one the store
// answers promises key to the next waiter in the store's line.
func (s *Server) Release(ctx context.Context, key, token string) (bool, error) {
	return s.release(ctx, key, token, s.store.Release)
}

// release is Release or ReleaseInLine, answered by store unless scripted.
func (s *Server) release(ctx context.Context, key, token string, store func(context.Context, string, string) (bool, error)) (bool, error) {
	r, ok, err := s.call(ctx, Call{Op: OpRelease, Key: key, Token: token},
		func(ctx context.Context, key, token string, _ time.Duration) (bool, error) {
			return store(ctx, key, token)
		})
	if ok && err == nil && !r.Store {
		s.Wake(key)
	}
	return ok, err
}

// call logs c and answers it from the script or the store, and returns the
// reply it followed (FromStore when it answered from the store).
func (s *Server) call(ctx context.Context, c Call, store func(context.Context, string, string, time.Duration) (bool, error)) (Reply, bool, error) {
	return s.callChecked(ctx, c, c.check(), store)
}

// callChecked is call of c, refused with bad if that is not nil: the
// error of arguments that c does not carry (a hold's slot, a leader's
// value).
func (s *Server) callChecked(ctx context.Context, c Call, bad error, store func(context.Context, string, string, time.Duration) (bool, error)) (Reply, bool, error) {
	s.mu.Lock()
	before := s.before
	s.mu.Unlock()
	if before != nil {
		before(ctx, c)
	}

	s.mu.Lock()
	r := FromStore
	if bad != nil {
		// Bad input is refused as a real server would, whatever the script.
		r = Fail(bad)
	} else if script := s.scripts[c.Op]; len(script) > 0 {
		i := s.next[c.Op]
		if i < len(script)-1 {
			s.next[c.Op] = i + 1
		}
		r = script[i]
	}
	idx := len(s.calls)
	s.calls = append(s.calls, c)
	s.mu.Unlock()

	ok, err := answer(ctx, r, func() (bool, error) { return store(ctx, c.Key, c.Token, c.TTL) })

	s.mu.Lock()
	s.calls[idx].OK, s.calls[idx].Err, s.calls[idx].Done = ok, err, true
	s.mu.Unlock()
	return r, ok, err
}

// check validates c's arguments as a real server would.
func (c Call) check() error {
	if ok, err := c.checkPrimitive(); ok {
		return err
	}
	switch c.Op {
	case OpAcquire, OpExtend:
		return keyserver.CheckTTL(c.Key, c.Token, c.TTL)
	case OpRaiseFence:
		return keyserver.CheckKey(c.Key)
	}
	return keyserver.CheckToken(c.Key, c.Token)
}

// answer waits as r says, then gives r's result or the store's.
func answer(ctx context.Context, r Reply, store func() (bool, error)) (bool, error) {
	if r.Block {
		<-ctx.Done()
		return false, ctx.Err()
	}
	if r.Delay > 0 {
		t := time.NewTimer(r.Delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return false, ctx.Err()
		case <-t.C:
		}
	}
	if r.Store {
		ok, err := store()
		if r.Err != nil {
			return false, r.Err // stored, and failed all the same
		}
		return ok, err
	}
	return r.OK, r.Err
}

// Cluster is a set of scripted servers, one per key server of a client.
type Cluster []*Server

// Table builds a Cluster from fixed replies, one row per server: column one
// is the Acquire (and Extend) reply, column two the Release reply.
// {{true, true}, {false, false}, {true, true}} is three servers of which two
// grant the lock.
func Table(rows [][]bool) Cluster {
	c := make(Cluster, len(rows))
	for i, r := range rows {
		var acquire, release bool
		if len(r) > 0 {
			acquire = r[0]
		}
		if len(r) > 1 {
			release = r[1]
		}
		c[i] = Fixed(acquire, release)
	}
	return c
}

// NewCluster returns n servers built with the same options.
func NewCluster(n int, opts ...Option) Cluster {
	c := make(Cluster, n)
	for i := range c {
		c[i] = New(opts...)
	}
	return c
}

// KeyServers returns the servers as the slice redlock.New takes.
func (c Cluster) KeyServers() []keyserver.KeyServer {
	ks := make([]keyserver.KeyServer, len(c))
	for i, s := range c {
		ks[i] = s
	}
	return ks
}

// Count returns how many calls of op the servers received in all.
func (c Cluster) Count(op Op) int {
	n := 0
	for _, s := range c {
		n += s.Count(op)
	}
	return n
}
