package transporttest

import (
	"context"
	"testing"
	"time"

	"github.com/goredlock/goredlock/keyserver/redis"
)

// CallersClient checks a key server made over a client its caller owns
// (a transport's New, where Run's servers may own theirs): it locks and
// unlocks, and once closed leaves the client working, as ping, a command
// through that client, tells.
func CallersClient(t *testing.T, s *redis.Server, ping func(context.Context) error) {
	t.Helper()
	ctx := context.Background()
	if ok, err := s.Acquire(ctx, "k", "t", time.Minute); !ok || err != nil {
		t.Fatalf("Acquire = %v, %v", ok, err)
	}
	if ok, err := s.Release(ctx, "k", "t"); !ok || err != nil {
		t.Fatalf("Release = %v, %v", ok, err)
	}
	s.Close()
	if err := ping(ctx); err != nil {
		t.Fatalf("the caller's client after the server closed: %v", err)
	}
}
