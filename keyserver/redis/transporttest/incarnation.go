package transporttest

import (
	"strings"
	"testing"
	"time"

	"github.com/goredlock/goredlock/internal/redistest"
)

// incarnation checks what a client quarantines restarted servers and
// tells stores apart by (keyserver.Incarnator) through the transport: the
// store's marker (redistest sets it an hour old) and INFO's run id, a new
// marker and run id after a restart (asked after a call, as a client asks
// after a grant), and CONFIG's appendonly and appendfsync.
func (s *suite) incarnation(t *testing.T) {
	began := time.Now()
	n, srv := s.single(t)
	id := n.RunID()
	in, err := srv.Incarnation(bg)
	must(t, "Incarnation", err)
	if !strings.HasSuffix(in.ID, "/"+id) || in.Durable || in.Up < time.Hour-time.Second || in.Up > time.Hour+time.Since(began) {
		t.Errorf("Incarnation = %+v; want an ID that ends in /%s, not durable, its data an hour old (%v)", in, id, time.Since(began))
	}
	if s.counted {
		// Asked after every grant: once the client has opened its
		// connections (some open theirs as they are first used), from
		// what the server read before.
		ask := func(i uint32) {
			_, err := srv.Acquire(bg, "counted", ranked(9, i), ttl)
			must(t, "Acquire", err)
			_, err = srv.Incarnation(bg)
			must(t, "Incarnation", err)
		}
		for i := uint32(1); i <= 32; i++ {
			ask(i)
		}
		c := counter{t, n}
		c.reset()
		for i := uint32(33); i <= 40; i++ {
			ask(i)
		}
		if got := c.infos(); got != 0 {
			t.Errorf("a transport that counts its connections read INFO %d times for 8 asks with no new connection, want 0", got)
		}
	}

	began = time.Now()
	n.Restart()
	eventually(t, 5*time.Second, "Acquire after the restart", func() bool {
		ok, err := srv.Acquire(bg, "k", ranked(1, 1), ttl)
		return err == nil && ok
	})
	// A client whose connections the restart broke may fail the first
	// ask: the client then counts no grant until it is answered.
	eventually(t, 5*time.Second, "Incarnation after the restart", func() bool {
		in, err = srv.Incarnation(bg)
		return err == nil
	})
	if strings.Contains(in.ID, id) || in.Up > time.Since(began) {
		t.Errorf("after a restart Incarnation = %+v; want a run id other than %s, its data no older than the restart (%v)", in, id, time.Since(began))
	}

	durable := s.server(t, Target{Addr: node(t, redistest.WithAppendFsyncAlways()).Addr()})
	in, err = durable.Incarnation(bg)
	must(t, "Incarnation of a node with appendfsync always", err)
	if !in.Durable {
		t.Errorf("Incarnation of a node with appendfsync always = %+v; want durable", in)
	}
}
