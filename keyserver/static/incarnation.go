package static

import (
	"context"

	"github.com/goredlock/goredlock/keyserver"
)

var _ keyserver.Incarnator = (*Server)(nil)

// WithIncarnation scripts Incarnation: fn answers every call, so that a
// test can make the server restart (a new ID and an Up that starts again,
// on the test's fake clock) whenever it likes, be durable or not, or fail
// to tell. Without it the server answers as its store does: a
// memory.Server's incarnation, durable, which no client quarantines.
func WithIncarnation(fn func() (keyserver.Incarnation, error)) Option {
	return func(s *Server) { s.incarnation = fn }
}

// Incarnation answers as WithIncarnation scripted, or as the store does.
// It is not logged with the calls.
func (s *Server) Incarnation(ctx context.Context) (keyserver.Incarnation, error) {
	s.mu.Lock()
	fn := s.incarnation
	s.mu.Unlock()
	if err := ctx.Err(); err != nil {
		return keyserver.Incarnation{}, err
	}
	if fn == nil {
		return s.store.Incarnation(ctx)
	}
	return fn()
}
