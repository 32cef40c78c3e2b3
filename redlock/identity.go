package redlock

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/goredlock/goredlock/keyserver"
)

// identities makes sure that no two of a client's servers reach the same
// store, which would then count its votes twice: servers that are
// keyserver.Identifiers are asked who they are when the client first
// uses them, and a store reached twice fails every call with
// ErrInvalidArgument. A server that does not answer is asked again by
// the next call.
type identities struct {
	settled atomic.Bool // every Identifier answered, and no two were one store
	mu      sync.Mutex
	ids     []string // by server; "" until it answered (or when it cannot tell)
	left    int      // Identifiers that have not answered yet
	err     error
}

// init sets id up for servers.
func (id *identities) init(servers []keyserver.KeyServer) {
	id.ids = make([]string, len(servers))
	for _, s := range servers {
		if _, ok := s.(keyserver.Identifier); ok {
			id.left++
		}
	}
}

// checkIdentities asks the Identifiers that have not answered yet who they are, each
// bounded by timeout, and returns the error every call must fail with, if
// two of them reach one store.
func (c *Client) checkIdentities(ctx context.Context, name string, timeout time.Duration) error {
	id := &c.identities
	if id.settled.Load() {
		return nil
	}
	id.mu.Lock()
	defer id.mu.Unlock()
	if id.left == 0 || id.err != nil {
		id.settled.Store(id.err == nil)
		return id.err
	}
	var wg sync.WaitGroup
	answers := make([]string, len(c.servers))
	for i, s := range c.servers {
		is, ok := s.(keyserver.Identifier)
		if !ok || id.ids[i] != "" {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			ictx, cancel := c.clock.WithTimeout(ctx, timeout)
			defer cancel()
			v, err := is.ServerID(ictx)
			c.observe(ctx, opIdentify, name, i, err)
			answers[i] = v
			if in, ok := s.(keyserver.Incarnator); ok && err == nil {
				in.Incarnation(ictx) //nolint:errcheck // primes what the quarantine asks after each grant
			}
		}()
	}
	wg.Wait()
	for i, v := range answers {
		if v == "" { // no answer, or it cannot tell
			continue
		}
		id.ids[i] = v
		id.left--
		for j, w := range id.ids {
			if j != i && w == v {
				id.err = invalidArgument("key servers %d and %d reach the same store, whose votes would count twice", min(i, j), max(i, j))
				return id.err
			}
		}
	}
	return nil
}
