package redlock

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/goredlock/goredlock/keyserver"
)

// identities makes sure that no two of a client's servers reach the same
// store, which would count its votes twice; a vote waits for its own
// server's identity only ("One store counts once" in docs/design.md). The
// identity is the ID of the server's incarnation, read once, before the
// server's first vote, from the answer the quarantine reads too.
type identities struct {
	known []atomic.Bool // by server: identified, or it cannot tell
	err   atomic.Pointer[error]

	mu   sync.Mutex
	ids  []string        // by server; "" until it answered (or when it cannot tell)
	asks []chan struct{} // by server: closed when the ask in flight ends; nil when none is
}

// init sets id up for servers: those the quarantine judges are asked
// (see judgedIncarnator); the others cannot tell. With a single server
// there is nothing to count twice.
func (id *identities) init(servers []keyserver.KeyServer) {
	id.known = make([]atomic.Bool, len(servers))
	id.ids = make([]string, len(servers))
	id.asks = make([]chan struct{}, len(servers))
	for i, s := range servers {
		if judgedIncarnator(s) == nil || len(servers) == 1 {
			id.known[i].Store(true)
		}
	}
}

// failed returns the error every call fails with once two servers were
// found to be one store; nil until then.
func (id *identities) failed() error {
	if p := id.err.Load(); p != nil {
		return *p
	}
	return nil
}

// identify makes sure server i's identity is known before its vote of f
// counts: it asks the server, or waits for the ask of another call, within
// ctx (the call's own bound). It fails when the server could not be asked
// (for a call whose grants the quarantine judges, as ErrQuarantined: the
// quarantine could not have told either), or when it reaches a store
// another server reaches.
func (c *Client) identify(ctx context.Context, i int, f *fan) error {
	id := &c.identities
	for !id.known[i].Load() {
		id.mu.Lock()
		if err := id.failed(); err != nil {
			id.mu.Unlock()
			return err
		}
		if id.known[i].Load() {
			id.mu.Unlock()
			return nil
		}
		if ask := id.asks[i]; ask != nil {
			id.mu.Unlock()
			select {
			case <-ask:
				continue
			case <-ctx.Done():
				return fmt.Errorf("identify: %w", ctx.Err())
			}
		}
		ask := make(chan struct{})
		id.asks[i] = ask
		id.mu.Unlock()
		// One ask: the quarantine sees the same answer, and a server that
		// keeps its incarnation (keyserver/redis) answers the quarantine's
		// asks after grants from it.
		in, err := c.servers[i].(keyserver.Incarnator).Incarnation(ctx)
		c.observe(ctx, opIdentify, f.name, i, err)
		if err == nil && c.quarantine != nil {
			c.quarantine.sight(i, in, c.quarantine.clock.Now())
		}
		id.mu.Lock()
		id.asks[i] = nil
		close(ask)
		if err == nil {
			err = id.recordLocked(c.servers, i, in.ID)
		} else if f.quarantine.q != nil {
			err = cannotTell(err)
		}
		id.mu.Unlock()
		if err != nil {
			return err
		}
	}
	return nil
}

// recordLocked records server i's identity v ("" when it cannot tell), and
// fails if another server has the same. id.mu must be held.
func (id *identities) recordLocked(servers []keyserver.KeyServer, i int, v string) error {
	if v != "" {
		for j, w := range id.ids {
			if j != i && w == v {
				err := invalidArgument("key servers %s and %s reach the same store, whose votes would count twice",
					serverName(servers, min(i, j)), serverName(servers, max(i, j)))
				id.err.Store(&err)
				return err
			}
		}
	}
	id.ids[i] = v
	id.known[i].Store(true)
	return nil
}

// serverName names server i in a message: its index, and what it says it
// is when it can (a Redis key server says its host and port, never a
// password).
func serverName(servers []keyserver.KeyServer, i int) string {
	if s, ok := servers[i].(fmt.Stringer); ok {
		return fmt.Sprintf("%d (%s)", i, s.String())
	}
	return fmt.Sprint(i)
}
