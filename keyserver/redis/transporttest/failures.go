package transporttest

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/goredlock/goredlock/internal/check"
	"github.com/goredlock/goredlock/internal/clock"
	"github.com/goredlock/goredlock/internal/redistest"
	"github.com/goredlock/goredlock/keyserver"
	"github.com/goredlock/goredlock/keyserver/redis"
)

// permanentErrors checks which failures are marked keyserver.ErrPermanent:
// a key of another type is, and left alone; an ended context and a node
// that is down are not.
func (s *suite) permanentErrors(t *testing.T) {
	n, srv := s.single(t)
	n.MustDo("RPUSH", "jobs", "x")
	calls := map[string]func() error{
		"Acquire":       func() error { _, err := srv.Acquire(bg, "jobs", "t", ttl); return err },
		"Extend":        func() error { _, err := srv.Extend(bg, "jobs", "t", ttl); return err },
		"Release":       func() error { _, err := srv.Release(bg, "jobs", "t"); return err },
		"AcquireInLine": func() error { _, _, err := srv.AcquireInLine(bg, "jobs", ranked(1, 1), ttl, ""); return err },
		"AcquireFenced": func() error { _, _, err := srv.AcquireFenced(bg, "jobs", "t", ttl); return err },
	}
	for name, call := range calls {
		if err := call(); !errors.Is(err, keyserver.ErrPermanent) {
			t.Errorf("%s of a list = %v; want an error marked ErrPermanent", name, err)
		}
	}
	if got := n.MustDo("LLEN", "jobs"); got != int64(1) {
		t.Errorf("the list holds %v items after the calls; want it left alone", got)
	}
	ctx, cancel := context.WithCancel(bg)
	cancel()
	if _, err := srv.Acquire(ctx, "k", "t", ttl); !errors.Is(err, context.Canceled) || errors.Is(err, keyserver.ErrPermanent) {
		t.Errorf("Acquire with a cancelled context = %v; want context.Canceled, not permanent", err)
	}
	n.Kill()
	ctx, cancel = context.WithTimeout(bg, 2*time.Second)
	defer cancel()
	if _, err := srv.Acquire(ctx, "k", "t", ttl); err == nil || errors.Is(err, keyserver.ErrPermanent) {
		t.Errorf("Acquire on a node that is down = %v; want an error that is not permanent", err)
	}
}

// wrongPassword checks that a rejected password is a permanent failure
// that says so, and that no error repeats the password.
func (s *suite) wrongPassword(t *testing.T) {
	const secret, wrong = "s3cret-Pw", "bad-Pw-7f3a"
	n := node(t, redistest.WithPassword(secret))
	want(t, "Acquire with the password", true)(s.server(t, Target{Addr: n.Addr(), Password: secret}).Acquire(bg, "k", "t", ttl))
	for _, pw := range []string{wrong, ""} {
		err, made := s.refused(t, Target{Addr: n.Addr(), Password: pw})
		switch {
		case err == nil:
			t.Errorf("Acquire with password %q succeeded", pw)
		case !errors.Is(err, keyserver.ErrPermanent):
			t.Errorf("Acquire with password %q = %v; want a permanent failure", pw, err)
		case made && !strings.Contains(err.Error(), "authentication failed"):
			t.Errorf("Acquire with password %q = %v; want it to say authentication failed", pw, err)
		case strings.Contains(err.Error(), wrong) || strings.Contains(err.Error(), secret):
			t.Errorf("an error repeats the password: %v", err)
		}
	}
}

// refused returns why a server to target cannot lock, and whether the
// server was made: the error of its first Acquire or, for a client that
// connects when it is made, the error NewServer gave, marked permanent (a
// client that refuses to be made cannot be retried into working).
func (s *suite) refused(t *testing.T, target Target) (err error, made bool) {
	t.Helper()
	srv, err := s.newServer(t, target)
	if err != nil {
		return check.Permanent(err), false
	}
	defer srv.Close()
	ctx, cancel := context.WithTimeout(bg, 5*time.Second)
	defer cancel()
	_, err = srv.Acquire(ctx, "k", "t", ttl)
	return err, true
}

// tls checks a node that speaks TLS only: locks and turns work with a
// client that trusts its certificate, and a client that does not fails
// permanently.
func (s *suite) tls(t *testing.T) {
	c := redistest.Start(t, 1, redistest.WithTLS())
	addr := c.Nodes[0].Addr()
	srv := s.server(t, Target{Addr: addr, TLS: c.TLSConfig()})
	want(t, "Acquire over TLS", true)(srv.Acquire(bg, "k", ranked(1, 1), ttl))
	ok, _, err := srv.AcquireInLine(bg, "k", ranked(2, 1), ttl, "")
	want(t, "AcquireInLine over TLS", false)(ok, err)
	turn, stop, err := srv.WatchTurn(bg, "k", ranked(2, 1))
	must(t, "WatchTurn over TLS", err)
	defer stop()
	want(t, "Release over TLS", true)(srv.Release(bg, "k", ranked(1, 1)))
	awaitClosed(t, turn, 5*time.Second, "the turn over TLS")

	untrusted := &tls.Config{RootCAs: x509.NewCertPool(), ServerName: "localhost", MinVersion: tls.VersionTLS12}
	if err, _ := s.refused(t, Target{Addr: addr, TLS: untrusted}); !errors.Is(err, keyserver.ErrPermanent) {
		t.Errorf("Acquire with an untrusted certificate = %v; want a permanent failure", err)
	}
}

// restart checks a node restarted empty: its waiters are woken, calls work
// again at once or after one failure, and Extend stores a lost key again.
func (s *suite) restart(t *testing.T) {
	n, srv := s.single(t)
	want(t, "Acquire", true)(srv.Acquire(bg, "k", ranked(1, 1), ttl))
	ok, _, err := srv.AcquireInLine(bg, "k", ranked(2, 1), ttl, "")
	want(t, "AcquireInLine", false)(ok, err)
	turn, stop, err := srv.WatchTurn(bg, "k", ranked(2, 1))
	must(t, "WatchTurn", err)
	defer stop()
	n.Restart()
	awaitClosed(t, turn, 5*time.Second, "the waiter, woken by the restart")
	eventually(t, 5*time.Second, "Extend after the restart", func() bool {
		ok, err := srv.Extend(bg, "k", ranked(1, 1), ttl)
		return err == nil && ok
	})
	if got := redistest.Text(n.MustDo("GET", "k")); got != ranked(1, 1) {
		t.Errorf("after Extend the key holds %q; want the holder's token", got)
	}
	eventually(t, 5*time.Second, "AcquireInLine after the restart", func() bool { // the line was lost: the waiter tries again
		ok, _, err := srv.AcquireInLine(bg, "k", ranked(2, 2), ttl, "")
		return err == nil && !ok
	})
	turn = watched(t, srv, "k", ranked(2, 1), "WatchTurn after the restart")
	released(t, srv, "k", ranked(1, 1)) // a client may hold more connections the kill broke
	awaitClosed(t, turn, 5*time.Second, "the turn after the restart")
}

// watched starts a WatchTurn, trying again for a while (see released),
// and stops it when t ends.
func watched(t *testing.T, srv *redis.Server, key, token, what string) <-chan struct{} {
	t.Helper()
	var turn <-chan struct{}
	eventually(t, 5*time.Second, what, func() bool {
		c, stop, err := srv.WatchTurn(bg, key, token)
		if err == nil {
			t.Cleanup(stop)
			turn = c
		}
		return err == nil
	})
	return turn
}

// released releases key, trying again for a while: after a restart or
// killed connections a client with several connections may meet a broken
// one more than once, as the redlock client would, which retries.
func released(t *testing.T, srv *redis.Server, key, token string) {
	t.Helper()
	eventually(t, 5*time.Second, "Release", func() bool {
		ok, err := srv.Release(bg, key, token)
		if err == nil && !ok {
			t.Fatalf("Release(%s) = false: the key is not the holder's", key)
		}
		return err == nil
	})
}

// pause checks that a paused node costs a call no more than its deadline,
// and a call whose context is cancelled no more than that: under the
// contexts of callers, and under those the redlock client bounds its
// calls with (a deadline of their own, which arms no timer until asked
// for Done, under a parent that may be cancelled), which a transport must
// not take for contexts that end by their deadline alone.
func (s *suite) pause(t *testing.T) {
	n, srv := s.single(t)
	want(t, "Acquire", true)(srv.Acquire(bg, "k", "t", ttl))
	n.Pause()
	cancelled, cancelParent := context.WithCancel(bg)
	defer cancelParent()
	probes := []struct {
		name string
		ctx  func() (context.Context, context.CancelFunc)
		want string
		// within is far past when the call should end, and far before
		// what a transport that misses the end would take: a client's
		// own read timeout (go-redis: 3s) or reconnection (rueidis: 5s),
		// the pipeline's watchdog (5s past the oldest call's deadline),
		// or the minute.
		within time.Duration
	}{
		{"a caller's deadline", func() (context.Context, context.CancelFunc) {
			return context.WithTimeout(bg, 200*time.Millisecond)
		}, "a failure at its 200ms deadline", time.Second},
		{"the client's deadline", func() (context.Context, context.CancelFunc) {
			return clock.Real{}.WithTimeout(bg, 200*time.Millisecond)
		}, "a failure at its 200ms deadline", time.Second},
		{"the client's deadline under a cancelled parent", func() (context.Context, context.CancelFunc) {
			time.AfterFunc(100*time.Millisecond, cancelParent)
			return clock.Real{}.WithTimeout(cancelled, time.Minute)
		}, "a failure when its parent is cancelled, after 100ms", 2 * time.Second},
	}
	for i, p := range probes {
		ctx, cancel := p.ctx()
		start := time.Now()
		_, err := srv.Acquire(ctx, fmt.Sprint("k", i+2), "t", ttl)
		took := time.Since(start)
		cancel()
		if err == nil || took > p.within {
			t.Errorf("Acquire on a paused node under %s = %v after %v; want %s", p.name, err, took, p.want)
		}
	}
	n.Resume()
	eventually(t, 10*time.Second, "calls after the node resumed", func() bool {
		ok, err := srv.Release(bg, "k", "t")
		return err == nil && ok
	})
}

// killedConnections checks that killed client connections cost at most a
// failed call, and that a killed subscriber connection wakes its waiters
// and is replaced.
func (s *suite) killedConnections(t *testing.T) {
	n, srv := s.single(t)
	want(t, "Acquire", true)(srv.Acquire(bg, "k", ranked(1, 1), ttl))
	turn, stop, err := srv.WatchTurn(bg, "k", ranked(2, 1))
	must(t, "WatchTurn", err)
	defer stop()
	n.MustDo("CLIENT", "KILL", "TYPE", "pubsub")
	awaitClosed(t, turn, 5*time.Second, "the waiter, woken by the killed subscriber connection")
	n.MustDo("CLIENT", "KILL", "TYPE", "normal")
	eventually(t, 5*time.Second, "calls after the connections were killed", func() bool {
		ok, err := srv.Extend(bg, "k", ranked(1, 1), ttl)
		return err == nil && ok
	})
	eventually(t, 5*time.Second, "AcquireInLine after the killed connections", func() bool { // woken, the waiter tries again
		ok, _, err := srv.AcquireInLine(bg, "k", ranked(2, 2), ttl, "")
		return err == nil && !ok
	})
	turn = watched(t, srv, "k", ranked(2, 1), "WatchTurn on a new subscriber connection")
	released(t, srv, "k", ranked(1, 1)) // a client may hold more connections the kill broke
	awaitClosed(t, turn, 5*time.Second, "the turn through the new subscriber connection")
}

// aclWithoutPubSub checks a user whom the ACL denies every channel: locks
// and the line still work (a release hands the key over, unannounced), and
// WatchTurn fails permanently.
func (s *suite) aclWithoutPubSub(t *testing.T) {
	n := node(t)
	n.MustDo("ACL", "SETUSER", "locker", "on", ">locker-pw", "~*", "resetchannels", "+@all")
	srv := s.server(t, Target{Addr: n.Addr(), Username: "locker", Password: "locker-pw"})
	h, w := ranked(1, 1), ranked(2, 1)
	want(t, "Acquire", true)(srv.Acquire(bg, "k", h, ttl))
	ok, _, err := srv.AcquireInLine(bg, "k", w, ttl, "")
	want(t, "AcquireInLine", false)(ok, err)
	want(t, "Release, its PUBLISH denied", true)(srv.Release(bg, "k", h))
	want(t, "Acquire(other) of the key promised to the waiter", false)(srv.Acquire(bg, "k", "other", ttl))
	ok, _, err = srv.AcquireInLine(bg, "k", ranked(2, 2), ttl, "")
	want(t, "the waiter's claim", true)(ok, err)
	ctx, cancel := context.WithTimeout(bg, 5*time.Second)
	defer cancel()
	if _, _, err := srv.WatchTurn(ctx, "k", ranked(3, 1)); !errors.Is(err, keyserver.ErrPermanent) {
		t.Errorf("WatchTurn without channel rights = %v; want a permanent failure", err)
	}
}

// scriptsByDigest checks that scripts run by the digest the server gave
// (SCRIPT LOAD), and by their source again after SCRIPT FLUSH.
func (s *suite) scriptsByDigest(t *testing.T) {
	n, srv := s.single(t)
	c := counter{t, n}
	c.reset()
	warm(t, srv)
	calls := c.calls()
	if calls["script|load"] == 0 || calls["evalsha"] == 0 {
		t.Errorf("warming up ran %v; want SCRIPT LOAD and EVALSHA", calls)
	}
	n.MustDo("SCRIPT", "FLUSH")
	want(t, "Acquire", true)(srv.Acquire(bg, "k", "t", ttl))
	want(t, "Acquire of a key of ours after SCRIPT FLUSH", true)(srv.Acquire(bg, "k", "t", ttl))
	want(t, "Release after SCRIPT FLUSH", true)(srv.Release(bg, "k", "t"))
}
