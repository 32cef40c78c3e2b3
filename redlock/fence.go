package redlock

import (
	"context"
	"time"

	"github.com/goredlock/goredlock/keyserver"
)

// WithFencing makes every grant carry a fencing token (Lock.Fence),
// strictly greater than every earlier grant's of the name, for the storage
// a lock protects to check. Every server must implement keyserver.Fencer,
// or New fails with ErrInvalidArgument. It costs one more round trip per
// grant ("Fencing across a quorum" in docs/design.md).
func WithFencing() ClientOption {
	return clientOnly(func(o *options) { o.fencing = true })
}

// Fence returns the lock's fencing token: greater than the token of every
// earlier grant of the lock's name, and kept by Extend. It is 0 unless the
// client was made WithFencing. For a set of names it is the first name's
// (see FenceOf).
func (l *Lock) Fence() uint64 {
	if l.zero() {
		return 0
	}
	return l.fence
}

// checkFencers refuses fencing over servers that cannot keep counters.
func checkFencers(servers []keyserver.KeyServer) error {
	return checkServers(servers, "WithFencing", "Fencer", implements[keyserver.Fencer])
}

// maxFenceRounds bounds the write rounds of one grant that fail for want
// of answers ("How a token is drawn" in docs/design.md).
const maxFenceRounds = 3

// maxRivalFenceRounds bounds the write rounds of one grant that other
// grants of the name (permits, readers) keep outbidding, which is no
// failure; the grant's validity bounds them first.
const maxRivalFenceRounds = 64

// fence draws the fencing token of a grant whose acquisition read at most
// hint from the counters ("How a token is drawn" in docs/design.md); 0,
// with the last round's tally, when no round reached a quorum. worth
// reports whether the grant still has validity to give.
func (c *Client) fence(ctx context.Context, name, key string, timeout time.Duration, hint uint64, worth func() bool) (uint64, tally) {
	proposed := hint + 1
	var t tally
	outbid := false // the last round lost to higher counters, not to failures
	for round := 1; proposed <= keyserver.MaxFence; round++ {
		p := proposed
		f := fan{op: opRaiseFence, name: name, key: key, fence: p, timeout: timeout, rule: earliest, kind: lockOps{}}
		res := c.fanOut(ctx, f)
		c.settle(ctx, &f, &res, false) // nothing to undo: a counter raised stays raised
		if t = res.tally; t.won() {
			return p, t
		}
		if outbid = t.maxN >= p; !outbid {
			break // failures, not higher counters: another round would not help
		}
		if round >= maxFenceRounds && (round >= maxRivalFenceRounds || !worth() || ctx.Err() != nil) {
			break
		}
		proposed = t.maxN + 1
	}
	log, msg := c.logger.Warn, "redlock: fencing token not written to a quorum"
	if outbid { // no server failed: the grant gives way to the others, and its call tries again
		log, msg = c.logger.Debug, "redlock: fencing token outbid by other grants"
	}
	log(msg, "lock", name, "accepted", t.granted, "refused", t.refused, "failed", len(t.errs))
	return 0, t
}

// CheckFence reports whether fence is still the newest fencing token
// issued for the lock called name, for a resource that can ask the lock
// service before it acts; a quorum must answer, else it returns a
// *QuorumError. Every server must implement keyserver.Fencer. A grant may
// follow the check at once: a guard beside the resource (fence/redisfence,
// fence/sqlfence) is the airtight check ("Fences at the resource" in
// docs/design.md).
func (c *Client) CheckFence(ctx context.Context, name string, fence uint64) (current bool, err error) {
	if err := checkName("lock", name); err != nil {
		return false, err
	}
	if fence == 0 {
		return false, invalidArgument("fence 0 of lock %q: no grant draws it", name)
	}
	if err := checkFencers(c.servers); err != nil {
		return false, err
	}
	if err := c.enter(); err != nil {
		return false, err
	}
	defer c.exit()
	t, err := c.read(ctx, fan{op: opReadFence, name: name, key: c.options.keyPrefix + name, timeout: c.readTimeout(), rule: earliest, kind: lockOps{}})
	if err != nil {
		return false, err
	}
	if !t.won() {
		return false, newQuorumError("check fence", lockKind, name, 1, t, ctx.Err())
	}
	// Any later grant wrote more to a quorum, which shares a server with
	// this one ("Fences at the resource" in docs/design.md).
	return t.maxN == fence, nil
}

// drawFences draws the fencing token of each key the call holds for the
// grant of the attempt begun at start; nil, with the failed round's votes,
// when one was not written to a quorum. A set keeps its own (see FenceOf):
// its calls are its Lock's alone, and the Lock stays small.
func (a *acquisition) drawFences(ctx context.Context, hint uint64, start time.Time) ([]uint64, tally) {
	keys := []string{a.key}
	if s := a.kind.several(); s != nil {
		keys, hint = s.keys, 0
	}
	// A grant is worth a token while its validity exceeds the loss margin.
	worth := func() bool {
		return validity(a.b.ttl, a.c.clock.Since(start), a.o.driftFactor) > a.b.margin
	}
	fences := make([]uint64, len(keys))
	var t tally
	for i, k := range keys {
		if fences[i], t = a.c.fence(ctx, a.name, k, a.b.timeout, hint, worth); fences[i] == 0 {
			return nil, t
		}
	}
	if s := a.kind.several(); s != nil {
		s.fences = fences
	}
	return fences, t
}
