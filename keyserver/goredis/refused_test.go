package goredis_test

import (
	"context"
	"errors"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/goredlock/goredlock/keyserver"
	goredisks "github.com/goredlock/goredlock/keyserver/goredis"
	"github.com/goredlock/goredlock/redlock"
)

// closedPort returns the address of a loopback port nobody listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// TestRefused: a Redis that refuses connections fails a call with the
// dial's error, at once, whatever go-redis's retries (DialerRetries 5 and
// MaxRetries 3 by default, which would otherwise outlast the call's
// context and leave it "context deadline exceeded").
func TestRefused(t *testing.T) {
	client := goredis.NewClient(&goredis.Options{Addr: closedPort(t)})
	defer client.Close()
	s := goredisks.New(client)
	defer s.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	start := time.Now()
	_, err := s.Incarnation(ctx)
	took := time.Since(start)
	if !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("Incarnation = %v, want a refused connection", err)
	}
	if errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Incarnation = %v: the context's deadline, not the refusal", err)
	}
	if took > time.Second {
		t.Errorf("Incarnation took %v, want the refusal at once", took)
	}

	// Through a client, whose breaker takes the refusal for a dead server.
	rc, err := redlock.New([]keyserver.KeyServer{s}, redlock.WithServerTimeout(2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	start = time.Now()
	_, err = rc.TryAcquire(context.Background(), "k", 10*time.Second)
	took = time.Since(start)
	var qe *redlock.QuorumError
	if !errors.As(err, &qe) || !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("TryAcquire = %v, want a QuorumError with a refused connection", err)
	} else if msg := err.Error(); !strings.Contains(msg, "refused") {
		t.Errorf("TryAcquire = %q, want it to say refused", msg)
	}
	t.Logf("TryAcquire: %v after %v", err, took)
	if took > time.Second {
		t.Errorf("TryAcquire took %v, want the refusal at once (server timeout 2s)", took)
	}
}
