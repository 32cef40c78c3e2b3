// Package dialcount counts the connections a Redis transport opens, for
// the transports of this module and its nested modules (redigo's,
// rueidis's, valkey-go's, go-redis's): what makes them a
// keyserver/redis ConnectionCounter, so that a Server over them reads its
// Redis's incarnation again only after a new connection. A third-party
// transport implements ConnectionCounter with a counter of its own; this
// one is not part of the public API, since it is a counter, not a rule.
package dialcount

import "sync/atomic"

// Count counts successful dials. A transport (or whatever makes its
// connections) calls Dialed after every dial, and has Connections among
// its methods by holding a *Count. A nil *Count counts nothing and cannot
// tell.
type Count struct{ opened atomic.Int64 }

// Dialed counts a dial whose error was err: one connection more, if it
// succeeded.
func (c *Count) Dialed(err error) {
	if err == nil {
		c.opened.Add(1)
	}
}

// Connections returns how many dials have succeeded; false for a nil
// Count.
func (c *Count) Connections() (opened int64, ok bool) {
	if c == nil {
		return 0, false
	}
	return c.opened.Load(), true
}
