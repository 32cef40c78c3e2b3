package rueidis

import (
	"context"
	"time"

	"github.com/goredlock/goredlock/keyserver"
)

// Stand-ins for the line of waiters until the Redis key server family is
// merged into one server that keeps it: a waiter is not put in line, and
// is woken by the holder's TTL or its poll, never by its turn.

// AcquireInLine is AcquireOrHolder: this server keeps no line yet.
func (s *Server) AcquireInLine(ctx context.Context, key, token string, ttl time.Duration) (bool, keyserver.Holder, error) {
	return s.AcquireOrHolder(ctx, key, token, ttl)
}

// WatchTurn returns a turn that never comes: this server keeps no line yet.
func (s *Server) WatchTurn(ctx context.Context, key, token string) (<-chan struct{}, func(), error) {
	if err := keyserver.CheckArgs(key, token, 0, false); err != nil {
		return nil, nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	return make(chan struct{}), func() {}, nil
}

// LeaveLine has nothing to do: this server keeps no line yet.
func (s *Server) LeaveLine(_ context.Context, key, token string) error {
	return keyserver.CheckArgs(key, token, 0, false)
}
