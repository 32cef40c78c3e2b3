package memory

import (
	"context"
	"sync/atomic"

	"github.com/goredlock/goredlock/keyserver"
)

var _ keyserver.Incarnator = (*Server)(nil)

// incarnations numbers the Servers of the process, for their IDs.
var incarnations atomic.Int64

// Incarnation reports the Server as up since New and durable. Its keys
// live as long as the Server value does, and only this process reaches
// it: no client can see it restart and lose keys, so there is nothing to
// quarantine; a new Server is a new store, which no lock was granted on.
func (s *Server) Incarnation(ctx context.Context) (keyserver.Incarnation, error) {
	if err := ctx.Err(); err != nil {
		return keyserver.Incarnation{}, err
	}
	return keyserver.Incarnation{ID: s.id, Up: s.now().Sub(s.born), Durable: true}, nil
}
