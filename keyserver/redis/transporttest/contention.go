package transporttest

import (
	"strings"
	"testing"
	"time"
)

// contention checks WatchContention (keyserver.Notifier) across two servers, as
// between two processes: the holder's watch closes when a waiter of the
// other joins the line, or at once when one is in line already; a waiter
// that joins behind another publishes nothing; the watch costs its
// SUBSCRIBE and one EXISTS, and its stop an UNSUBSCRIBE.
func (s *suite) contention(t *testing.T) {
	n := node(t)
	holder, waiter := s.server(t, Target{Addr: n.Addr()}), s.server(t, Target{Addr: n.Addr()})
	c := counter{t, n}
	warm(t, holder)
	warm(t, waiter)
	const key = "contended"
	h := ranked(1, 1)
	want(t, "Acquire(holder)", true)(holder.Acquire(bg, key, h, ttl))

	c.reset()
	contended, broken, stop, err := holder.WatchContention(bg, key, h)
	must(t, "WatchContention", err)
	calls := c.calls()
	t.Logf("first WatchContention of the server (its subscriber connection opens): %v", calls)
	// The connection's handshake is the client's (HELLO, CLIENT SETINFO
	// and the like differ from one Redis client to another), not the
	// watch's.
	for name := range calls {
		if name == "hello" || name == "auth" || name == "select" || name == "ping" || strings.HasPrefix(name, "client|") {
			delete(calls, name)
		}
	}
	if calls["subscribe"] != 2 || calls["exists"] != 1 || len(calls) != 2 {
		t.Errorf("WatchContention ran %v; want the connection's SUBSCRIBE, the key's and one EXISTS", calls)
	}
	if isClosed(contended) || isClosed(broken) {
		t.Fatal("the watch ended with nobody in line")
	}
	ok, _, err := waiter.AcquireInLine(bg, key, ranked(2, 1), ttl, "")
	want(t, "AcquireInLine(waiter)", false)(ok, err)
	awaitClosed(t, contended, 5*time.Second, "the holder's watch once a waiter joined")
	if isClosed(broken) {
		t.Error("broken closed with contended")
	}
	c.reset()
	stop()
	stop() // harmless
	ok, _, err = waiter.AcquireInLine(bg, key, ranked(3, 1), ttl, "")
	want(t, "AcquireInLine(second waiter)", false)(ok, err)
	calls = c.calls()
	if calls["publish"] != 0 {
		t.Errorf("a waiter that joined behind another published: %v", calls)
	}
	if calls["unsubscribe"] != 1 {
		t.Errorf("the watch's stop ran %v; want one UNSUBSCRIBE", calls)
	}

	// A line that holds a waiter already: at once.
	c.reset()
	contended, _, stop, err = holder.WatchContention(bg, key, h)
	must(t, "WatchContention of a line with waiters", err)
	awaitClosed(t, contended, 5*time.Second, "the watch of a line that holds waiters")
	if calls := c.calls(); calls["subscribe"] != 1 || calls["exists"] != 1 || len(calls) != 2 {
		t.Errorf("WatchContention on a subscribed connection ran %v; want one SUBSCRIBE and one EXISTS", calls)
	}
	stop()
	must(t, "LeaveLine", waiter.LeaveLine(bg, key, ranked(2, 1)))
	must(t, "LeaveLine", waiter.LeaveLine(bg, key, ranked(3, 1)))
	want(t, "Release(holder)", true)(holder.Release(bg, key, h))
}
