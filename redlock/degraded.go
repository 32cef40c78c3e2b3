package redlock

import (
	"context"
	"errors"
	"sync/atomic"

	"github.com/goredlock/goredlock/keyserver"
)

// polled records, per server, that it refused a waiter's watch for good
// (an ACL that denies Pub/Sub, a server that cannot deliver messages):
// the client's waiters poll that server at the retry delay from then on,
// and the client says so once, not at every wait ("What a server must
// allow" in docs/redis.md).
// A refusal is for good only when it is keyserver.ErrPermanent: a watch
// that timed out is tried again at the next wait.
type polled []atomic.Bool

// watchFailed takes a failed watch on server i for the key of lock name.
func (c *Client) watchFailed(ctx context.Context, i int, name string, err error) {
	if !errors.Is(err, keyserver.ErrPermanent) || c.polled[i].Swap(true) {
		return
	}
	c.logger.Warn("redlock: key server refuses waiters' watches; they poll it at the retry delay",
		"server", i, "lock", name, "error", err)
	if h := c.hooks.Degraded; h != nil {
		h(ctx, i, "watch", err)
	}
}
