package redis

import (
	"context"

	redigo "github.com/gomodule/redigo/redis"

	"github.com/goredlock/goredlock/internal/dialcount"
)

// A pool whose dials are counted spares a Server over it (New) an INFO
// after every grant (see "Counted dials" in docs/design.md).

// CountDials makes pool count the connections it dials, and returns it
// counted, for New, which then reads its Redis's incarnation again only
// after a new connection, as FromURL's Server does:
//
//	pool := &redigo.Pool{DialContext: dial, MaxIdle: 8}
//	defer pool.Close()
//	srv := redis.New(redis.CountDials(pool))
//
// It wraps pool's DialContext (or Dial, when that is the one set), so call
// it before pool is first used; a pool with neither set stays as it is.
// Dials made another way (a copy of the function taken earlier) are not
// counted, and a Server that misses a dial can miss a restart. Other users'
// dials through the pool count too, at a read of INFO each. The result is
// pool itself to everyone else: keep using pool. A nil pool gives nil.
func CountDials(pool *redigo.Pool) Pool {
	if pool == nil {
		return nil
	}
	p := &countedPool{Pool: pool}
	switch dialContext, dial := pool.DialContext, pool.Dial; {
	case dialContext != nil:
		pool.DialContext = func(ctx context.Context) (redigo.Conn, error) {
			c, err := dialContext(ctx)
			p.count.Dialed(err)
			return c, err
		}
	case dial != nil:
		pool.Dial = func() (redigo.Conn, error) {
			c, err := dial()
			p.count.Dialed(err)
			return c, err
		}
	}
	return p
}

// countedPool is a pool that CountDials counts: a ConnectionCounter, by
// which the Server's transport counts the connections it borrows.
type countedPool struct {
	*redigo.Pool
	count dialcount.Count
}

var _ ConnectionCounter = (*countedPool)(nil)

// Connections returns how many connections the pool has dialed since
// CountDials.
func (p *countedPool) Connections() (int64, bool) { return p.count.Connections() }
