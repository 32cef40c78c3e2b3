package redlock

import (
	"context"
	"errors"
	"sync/atomic"

	"github.com/goredlock/goredlock/keyserver"
)

// health counts each server's consecutive failures, so that the log says
// when a server starts failing and when it recovers, once each, instead of
// once per call: with one server of three down, a thousand locks write one
// warning, not two thousand.
type health struct {
	failures []atomic.Int64 // per server; 0 while it answers
	breakers breakers       // per server (see breaker)
}

// observe records a server call's outcome: the first failure after a
// success is a warning, the first success after failures an info line
// with their count, and every failure a debug line and a ServerFailed
// hook. A call cut short by its caller's cancellation says nothing about
// the server and is only logged at debug level, as is a grant not counted
// because its server is quarantined (see ErrQuarantined).
func (c *Client) observe(ctx context.Context, op opKind, name string, server int, err error) {
	n := &c.health.failures[server]
	b := &c.health.breakers[server]
	if err == nil {
		b.answered()
		if n.Load() != 0 {
			if was := n.Swap(0); was > 0 {
				c.logger.Info("redlock: key server recovered", "server", server, "failures", was)
			}
		}
		return
	}
	if h := c.hooks.ServerFailed; h != nil {
		h(ctx, op.String(), name, server, err)
	}
	if errors.Is(err, errServerDown) || errors.Is(err, errNotSent) { // not called: the calls that were count
		return
	}
	if errors.Is(err, context.Canceled) {
		b.cancelled()
		c.logger.Debug("redlock: key server call cancelled", "op", op, "lock", name, "server", server)
		return
	}
	if errors.Is(err, ErrQuarantined) { // it answers: no failure to count
		c.logger.Debug("redlock: grant of a quarantined key server not counted", "op", op, "lock", name, "server", server, "error", err)
		return
	}
	failures := n.Add(1)
	if !errors.Is(err, keyserver.ErrPermanent) {
		b.failed(c.clock, failures, err)
	}
	if failures == 1 {
		c.logger.Warn("redlock: key server failing", "op", op, "lock", name, "server", server, "error", err)
		return
	}
	c.logger.Debug("redlock: key server failed", "op", op, "lock", name, "server", server, "error", err)
}

// logVotes reports a lost vote at debug level; fanOut has already logged
// each server failure.
func (c *Client) logVotes(op opKind, name string, t tally) {
	if !t.won() {
		c.logger.Debug("redlock: quorum not reached", "op", op, "lock", name,
			"granted", t.granted, "refused", t.refused, "servers", t.n)
	}
}
