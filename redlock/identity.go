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
// server's identity only ("One store counts once" in docs/design.md).
type identities struct {
	known []atomic.Bool // by server: identified, or it cannot tell
	err   atomic.Pointer[error]

	mu   sync.Mutex
	ids  []string        // by server; "" until it answered (or when it cannot tell)
	asks []chan struct{} // by server: closed when the ask in flight ends; nil when none is
}

// init sets id up for servers. With a single server there is nothing to
// count twice.
func (id *identities) init(servers []keyserver.KeyServer) {
	id.known = make([]atomic.Bool, len(servers))
	id.ids = make([]string, len(servers))
	id.asks = make([]chan struct{}, len(servers))
	for i, s := range servers {
		if _, ok := s.(keyserver.Identifier); !ok || len(servers) == 1 {
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

// identify makes sure server i's identity is known before its vote
// counts: it asks the server, or waits for the ask of another call, within
// ctx (the call's own bound). It fails when the server could not be asked,
// or when it reaches a store another server reaches.
func (c *Client) identify(ctx context.Context, i int, name string) error {
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
		v, err := c.servers[i].(keyserver.Identifier).ServerID(ctx)
		c.observe(ctx, opIdentify, name, i, err)
		if in, ok := c.servers[i].(keyserver.Incarnator); ok && err == nil {
			in.Incarnation(ctx) //nolint:errcheck // primes what the quarantine asks after each grant
		}
		id.mu.Lock()
		id.asks[i] = nil
		close(ask)
		if err == nil {
			err = id.recordLocked(c.servers, i, v)
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
