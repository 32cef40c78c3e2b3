package redis

import (
	"context"
	"sync/atomic"

	redigo "github.com/gomodule/redigo/redis"
)

// A Server over a caller's pool (New) cannot see the pool's dials, so it
// reads its Redis's INFO after every grant to learn whether the Redis
// restarted (see ConnectionCounter): a fifth command per lock and unlock,
// and for a caller alone a third round trip, which made a lock over New
// take twice as long as one over FromURL. A pool the caller counts before
// using it spares both.

// CountedPool is a redigo pool that counts the connections it dials. A
// Server over it (New) reads its Redis's incarnation again only after a
// new connection, as FromURL's Server does. Its methods are the pool's.
type CountedPool struct {
	*redigo.Pool
	opened atomic.Int64
}

var _ ConnectionCounter = (*CountedPool)(nil)

// CountDials makes pool count the connections it dials, and returns it
// counted, for New:
//
//	srv := redis.New(redis.CountDials(pool))
//
// It wraps pool's DialContext (or Dial, when that is the one set), so call
// it before pool is first used, as when setting any of its fields; a pool
// with neither set stays as it is and fails to dial. Dials made through
// another way than the pool's (a copy of the function taken earlier) are
// not counted: a Server that misses a dial can miss a restart. The pool
// may serve other users too: their dials count as well, and only cost a
// read of INFO each. A nil pool gives a nil CountedPool.
func CountDials(pool *redigo.Pool) *CountedPool {
	if pool == nil {
		return nil
	}
	p := &CountedPool{Pool: pool}
	switch dialContext, dial := pool.DialContext, pool.Dial; {
	case dialContext != nil:
		pool.DialContext = func(ctx context.Context) (redigo.Conn, error) {
			return p.count(dialContext(ctx))
		}
	case dial != nil:
		pool.Dial = func() (redigo.Conn, error) { return p.count(dial()) }
	}
	return p
}

// count counts a dial that succeeded.
func (p *CountedPool) count(c redigo.Conn, err error) (redigo.Conn, error) {
	if err == nil {
		p.opened.Add(1)
	}
	return c, err
}

// Connections returns how many connections the pool has dialed since
// CountDials.
func (p *CountedPool) Connections() (opened int64, ok bool) {
	return p.opened.Load(), true
}
