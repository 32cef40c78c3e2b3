package redis

import (
	"context"
	"sync/atomic"

	redigo "github.com/gomodule/redigo/redis"
)

// A pool whose dials are counted spares a Server over it (New) an INFO
// after every grant (see "Counted dials" in docs/design.md).

// DialCount counts the connections a transport opens, for the Server's
// ConnectionCounter: a transport (or whatever makes its connections) calls
// Dialed after every dial, and has Connections among its methods by
// holding a *DialCount. A nil *DialCount counts nothing and cannot tell.
type DialCount struct{ opened atomic.Int64 }

var _ ConnectionCounter = (*DialCount)(nil)

// Dialed counts a dial whose error was err: one connection more, if it
// succeeded.
func (d *DialCount) Dialed(err error) {
	if err == nil {
		d.opened.Add(1)
	}
}

// Connections returns how many dials have succeeded; false for a nil
// DialCount.
func (d *DialCount) Connections() (opened int64, ok bool) {
	if d == nil {
		return 0, false
	}
	return d.opened.Load(), true
}

// counting returns dial, counting in d the connections it makes.
func (d *DialCount) counting(dial func(context.Context) (redigo.Conn, error)) func(context.Context) (redigo.Conn, error) {
	return func(ctx context.Context) (redigo.Conn, error) {
		c, err := dial(ctx)
		d.Dialed(err)
		return c, err
	}
}

// CountedPool is a redigo pool that counts the connections it dials. A
// Server over it (New) reads its Redis's incarnation again only after a
// new connection, as FromURL's Server does. Its methods are the pool's,
// and Connections, the dials since CountDials.
type CountedPool struct {
	*redigo.Pool
	DialCount
}

var _ ConnectionCounter = (*CountedPool)(nil)

// CountDials makes pool count the connections it dials, and returns it
// counted, for New:
//
//	srv := redis.New(redis.CountDials(pool))
//
// It wraps pool's DialContext (or Dial, when that is the one set), so call
// it before pool is first used; a pool with neither set stays as it is.
// Dials made another way (a copy of the function taken earlier) are not
// counted, and a Server that misses a dial can miss a restart. Other users'
// dials through the pool count too, at a read of INFO each. A nil pool
// gives a nil CountedPool.
func CountDials(pool *redigo.Pool) *CountedPool {
	if pool == nil {
		return nil
	}
	p := &CountedPool{Pool: pool}
	switch dialContext, dial := pool.DialContext, pool.Dial; {
	case dialContext != nil:
		pool.DialContext = p.counting(dialContext)
	case dial != nil:
		pool.Dial = func() (redigo.Conn, error) {
			c, err := dial()
			p.Dialed(err)
			return c, err
		}
	}
	return p
}
