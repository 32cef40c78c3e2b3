package redlock

import (
	"context"
	"time"

	"github.com/goredlock/goredlock/keyserver"
)

// primOps makes the server calls of a primitive's hold in place of a lock
// key's, so that the fan-out, the votes, Lock, KeepAlive and Do serve the
// primitives unchanged.
type primOps interface {
	// call makes f's call (f.op is opAcquire, opExtend, opRelease or
	// opRead) to server i, as fan.call does for a lock.
	call(ctx context.Context, f *fan, i int, ks keyserver.KeyServer) (ok bool, n uint64, h keyserver.Holder, err error)
}

// primitive is what the acquisition of a primitive's hold asks of the
// primitive.
type primitive interface {
	// ops returns the calls of the next attempt: a semaphore picks the
	// slot it asks for.
	ops() primOps
	// again reports, after a refused attempt whose calls were ops, whether
	// to try again at once rather than wait: a semaphore whose refusals
	// named a slot free on a quorum.
	again(ops primOps, t tally) bool
	// watch watches on server ks for what the call of token waits for: a
	// change of the primitive's key, or a set's turns in the lines of its
	// keys not yet promised to it (promised).
	watch(ctx context.Context, ks keyserver.KeyServer, key, token string, promised uint64) ([]<-chan struct{}, func(), error)
	// together is how many calls could be granted together, which is
	// how many of a client's waiting calls try on the servers at once
	// (see gates); 0 for no bound.
	together() int
}

// maxAtOnce bounds the attempts a call makes in a row without waiting,
// when refusals keep naming a free slot that others take first.
const maxAtOnce = 3

// checkServers refuses what needs every server to implement iface (is)
// over servers that do not, before any server is asked.
func checkServers(servers []keyserver.KeyServer, what, iface string, is func(keyserver.KeyServer) bool) error {
	for i, s := range servers {
		if !is(s) {
			return invalidArgument("%s needs every key server to implement keyserver.%s; server %d (%T) does not", what, iface, i, s)
		}
	}
	return nil
}

// implements reports whether ks implements T.
func implements[T any](ks keyserver.KeyServer) bool {
	_, ok := ks.(T)
	return ok
}

// primOptions resolves the options of a call that takes a hold of kind k
// and checks its name and TTL, before any server is asked.
func (c *Client) primOptions(k kind, name string, ttl time.Duration, opts []Option) (*options, error) {
	o, err := c.options.with(opts)
	if err != nil {
		return nil, err
	}
	if err := checkHold(o, k, name, ttl); err != nil {
		return nil, err
	}
	return o, nil
}

// holdCall makes f's call (acquire, extend, else release) of hold h to
// ks, a keyserver.HoldKeeper; only an acquire has a reply.
func holdCall(ctx context.Context, f *fan, ks keyserver.KeyServer, h keyserver.HoldSpec) (bool, keyserver.HoldReply, error) {
	hk := ks.(keyserver.HoldKeeper)
	switch f.op {
	case opAcquire:
		return hk.AcquireHold(ctx, h, f.ttl)
	case opExtend:
		ok, err := hk.ExtendHold(ctx, h, f.ttl)
		return ok, keyserver.HoldReply{}, err
	}
	ok, err := hk.ReleaseHold(ctx, h)
	return ok, keyserver.HoldReply{}, err
}
