package static

import (
	"context"

	"github.com/goredlock/goredlock/keyserver"
)

var _ keyserver.Inspector = (*Server)(nil)

// OpInspect is Inspect: only Err, Delay and Block of its replies count;
// otherwise it answers from the store. Its Call's Key is the lock key.
const OpInspect Op = "inspect"

// Inspect answers from the store, unless OpInspect's script fails or
// holds up the call.
func (s *Server) Inspect(ctx context.Context, keys keyserver.NameKeys) (keyserver.NameStatus, error) {
	var st keyserver.NameStatus
	_, _, err := s.vote(ctx, Call{Op: OpInspect, Key: keys.Lock}, func(ctx context.Context) (bool, error) {
		got, err := s.store.Inspect(ctx, keys)
		st = got
		return err == nil, err
	})
	if err != nil {
		return keyserver.NameStatus{}, err
	}
	return st, nil
}
