package main

import (
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	redigo "github.com/gomodule/redigo/redis"
)

// The floor is the least a Redlock client over redigo can send: SET NX PX
// on every node at once, a count of the replies, and an owner-checked DEL
// on every node to release (or to clean up a lost vote). It waits for every
// node, has no per-call deadline beyond the connection's, no drift margin
// and no retry limit: it is what the libraries are measured against, not a
// lock to use.
func floorPeer() peer {
	return peer{
		name:  "floor",
		about: "raw fan-out over redigo pools of 64 connections per node: SET NX PX on all nodes concurrently, waits for all, majority wins; release and clean-up by an owner-checked DEL script; retries until granted after a wait uniform in -retry±50%.",
		skip:  runsAlways,
		open: func(addrs []string, s settings) (locker, error) {
			f := &floor{s: s, quorum: len(addrs)/2 + 1}
			for _, a := range addrs {
				f.pools = append(f.pools, newPool(a))
			}
			return f, nil
		},
	}
}

var delIfOwner = redigo.NewScript(1, `if redis.call("GET", KEYS[1]) == ARGV[1] then return redis.call("DEL", KEYS[1]) end return 0`)

type floor struct {
	pools  []*redigo.Pool
	quorum int
	s      settings
}

func (f *floor) lock(ctx context.Context, name string) (func(context.Context) error, error) {
	ttl := f.s.ttl.Milliseconds()
	for {
		token := newToken()
		votes := f.each(func(c redigo.Conn) bool {
			r, err := redigo.String(c.Do("SET", name, token, "NX", "PX", ttl))
			return err == nil && r == "OK"
		})
		if votes >= f.quorum {
			return func(context.Context) error {
				if f.release(name, token) < f.quorum {
					return errNotReleased
				}
				return nil
			}, nil
		}
		f.release(name, token)
		wait := f.s.retry/2 + time.Duration(rand.Int64N(int64(f.s.retry)+1))
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(wait):
		}
	}
}

func (f *floor) release(name, token string) int {
	return f.each(func(c redigo.Conn) bool {
		n, err := redigo.Int(delIfOwner.Do(c, name, token))
		return err == nil && n == 1
	})
}

// each runs call on a connection of every node concurrently and counts the
// nodes where it returned true.
func (f *floor) each(call func(redigo.Conn) bool) int {
	on := func(p *redigo.Pool) bool {
		c := p.Get()
		defer c.Close()
		return call(c)
	}
	if len(f.pools) == 1 {
		if on(f.pools[0]) {
			return 1
		}
		return 0
	}
	var (
		wg  sync.WaitGroup
		yes atomic.Int32
	)
	for _, p := range f.pools {
		wg.Add(1)
		go func(p *redigo.Pool) {
			defer wg.Done()
			if on(p) {
				yes.Add(1)
			}
		}(p)
	}
	wg.Wait()
	return int(yes.Load())
}

func (f *floor) close() error { return closePools(f.pools) }

func newToken() string {
	var b [16]byte
	crand.Read(b[:]) //nolint:errcheck // crypto/rand.Read never fails
	return hex.EncodeToString(b[:])
}
