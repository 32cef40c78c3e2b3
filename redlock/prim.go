package redlock

import (
	"context"
	"math"
	"time"

	"github.com/goredlock/goredlock/keyserver"
)

// primitive answers for every kind (the lock, a set, a permit, a read or
// write hold, a leadership) where it does as the others: each embeds it
// and answers the rest itself.
type primitive struct{}

func (primitive) attempted()             {}
func (primitive) again(tally) bool       { return false }
func (primitive) together() int          { return 0 }
func (primitive) maxWait() time.Duration { return math.MaxInt64 }
func (primitive) several() *nameSet      { return nil }
func (primitive) traits() traits         { return traits{} }

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

func implements[T any](ks keyserver.KeyServer) bool {
	_, ok := ks.(T)
	return ok
}

// primOptions resolves the options of a call that takes a hold of kind k
// and checks its name and TTL, before any server is asked.
func (c *Client) primOptions(k kindName, name string, ttl time.Duration, opts []Option) (*options, error) {
	o, err := c.options.with(opts)
	if err != nil {
		return nil, err
	}
	if err := checkHold(o, k, name, ttl); err != nil {
		return nil, err
	}
	return o, nil
}

// takeHold is every call that takes one hold of kind k on name (a lock, a
// permit, a read or write hold; op names it to the hooks), after bad (a
// primitive's own invalid argument, if any): hold gives the hold's key and
// calls for the call's options. It waits as m says and, with do, runs fn
// under the hold as Client.Do does, returning no Lock.
func (c *Client) takeHold(ctx context.Context, op string, k kindName, name string, bad error, ttl time.Duration, m mode, do bool,
	fn func(context.Context) error, opts []Option, hold func(*options) (string, holdKind)) (l *Lock, err error) {
	ctx = c.callBegins(ctx, op, name)
	defer func() { c.callEnds(ctx, op, name, err) }()
	if bad != nil {
		return nil, bad
	}
	o, err := c.primOptions(k, name, ttl, opts)
	if err != nil {
		return nil, err
	}
	acquire := func(o *options) (*Lock, error) {
		key, calls := hold(o)
		return c.acquireHold(ctx, o, name, key, ttl, m, false, calls)
	}
	if do {
		_, err = c.doWith(ctx, o, k, name, ttl, fn, acquire)
		return nil, err
	}
	return acquire(o)
}

// holdCall makes f's call (acquire, extend, else release, in line for a
// waiter's give-back) of hold h to ks, a keyserver.HoldKeeper; only an
// acquire has a reply.
func holdCall(ctx context.Context, f *fan, ks keyserver.KeyServer, h keyserver.HoldSpec) (bool, keyserver.HoldReply, error) {
	hk := ks.(keyserver.HoldKeeper)
	switch f.op {
	case opAcquire:
		return hk.AcquireHold(ctx, h, f.ttl)
	case opExtend:
		ok, err := hk.ExtendHold(ctx, h, f.ttl)
		return ok, keyserver.HoldReply{}, err
	}
	h.InLine = f.op == opGiveBack
	ok, err := hk.ReleaseHold(ctx, h)
	return ok, keyserver.HoldReply{}, err
}

// watchHolds watches the holds of h on ks, for a primitive's watch.
func watchHolds(ctx context.Context, ks keyserver.KeyServer, h keyserver.HoldSpec) ([]<-chan struct{}, func(), error) {
	changed, stop, err := ks.(keyserver.HoldKeeper).WatchHolds(ctx, h)
	return []<-chan struct{}{changed}, stop, err
}
