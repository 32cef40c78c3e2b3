package redigotransport

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	redigo "github.com/gomodule/redigo/redis"
	"go.uber.org/goleak"
)

// waitServer is a Redis as far as WAIT goes: each connection's commands
// are read as they come (received), run in order, and a WAIT holds up the
// connection's later commands until the test answers it (answer) or hangs
// up (hangUp). Every other command is answered +OK.
type waitServer struct {
	t       *testing.T
	answers chan string   // the reply of the WAIT being run, or "" to hang up
	done    chan struct{} // closed by close: no WAIT is answered any more

	mu       sync.Mutex
	changed  chan struct{} // closed and replaced when received grows
	received []string      // the commands read, each as its words joined by spaces
	conns    []net.Conn
	wg       sync.WaitGroup
}

func newWaitServer(t *testing.T) *waitServer {
	return &waitServer{t: t, answers: make(chan string), done: make(chan struct{}), changed: make(chan struct{})}
}

func (s *waitServer) dial(context.Context) (redigo.Conn, error) {
	client, server := net.Pipe()
	queue := make(chan []string, 1024)
	s.mu.Lock()
	s.conns = append(s.conns, server)
	s.mu.Unlock()
	s.wg.Add(2)
	go func() { // read ahead, as Redis does while a WAIT blocks its client
		defer s.wg.Done()
		defer close(queue)
		rc := redigo.NewConn(server, 0, 0)
		for {
			v, err := redigo.Values(rc.Receive())
			if err != nil {
				return
			}
			words, _ := redigo.Strings(v, nil)
			s.mu.Lock()
			s.received = append(s.received, strings.Join(words, " "))
			close(s.changed)
			s.changed = make(chan struct{})
			s.mu.Unlock()
			queue <- words
		}
	}()
	go func() {
		defer s.wg.Done()
		for words := range queue {
			reply := "+OK\r\n"
			if words[0] == "WAIT" {
				select {
				case reply = <-s.answers:
				case <-s.done:
				}
				if reply == "" {
					server.Close() //nolint:errcheck // hanging up is the point
					return
				}
			}
			if _, err := server.Write([]byte(reply)); err != nil {
				return
			}
		}
	}()
	return redigo.NewConn(client, 0, 0), nil
}

// await returns the commands received once there are n.
func (s *waitServer) await(n int) []string {
	s.t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		s.mu.Lock()
		got, changed := append([]string(nil), s.received...), s.changed
		s.mu.Unlock()
		if len(got) >= n {
			return got
		}
		select {
		case <-changed:
		case <-timeout:
			s.t.Fatalf("%d commands received, want %d: %q", len(got), n, got)
		}
	}
}

// answer answers the WAIT being run with an integer reply.
func (s *waitServer) answer(acks int) { s.answers <- ":" + strconv.Itoa(acks) + "\r\n" }

// hangUp closes the connection whose WAIT is being run.
func (s *waitServer) hangUp() { s.answers <- "" }

// close closes every connection and waits for their goroutines.
func (s *waitServer) close() {
	close(s.done)
	s.mu.Lock()
	for _, c := range s.conns {
		c.Close() //nolint:errcheck // done
	}
	s.mu.Unlock()
	s.wg.Wait()
}

// errJudged is what the tests' judge fails a write with.
var errJudged = errors.New("unconfirmed")

// confirmedPipeline returns a pipeline over srv that confirms its writes
// with WAIT 1, judged as keyserver/redis judges it.
func confirmedPipeline(t *testing.T, srv *waitServer) *pipeline {
	t.Helper()
	judge := func(reply any, err error) error {
		switch {
		case err != nil:
			return fmt.Errorf("%w: %w", errJudged, err)
		case reply != int64(1):
			return fmt.Errorf("%w: %v replicas", errJudged, reply)
		}
		return nil
	}
	p := newPipeline(srv.dial, settings{maxPending: 100, confirm: Confirming{Words: []string{"WAIT", "1"}, Judge: judge}})
	t.Cleanup(func() {
		p.stop()
		srv.close()
		goleak.VerifyNone(t)
	})
	return p
}

// answers is a started call's Answerer.
type answers chan error

func (a answers) Answer(_ any, err error) { a <- err }

// start starts SET key on p as a write to confirm, answered to a.
func start(t *testing.T, p *pipeline, key string, a answers) {
	t.Helper()
	c, _ := newCall([]string{"SET"}, []string{key}, []string{"v"})
	c.confirm = true
	if !p.start(c, time.Now().Add(10*time.Second), a) {
		t.Fatal("not started")
	}
}

// unanswered fails t if a has been answered.
func unanswered(t *testing.T, a answers, what string) {
	t.Helper()
	select {
	case err := <-a:
		t.Fatalf("%s answered (%v) before its WAIT was", what, err)
	default:
	}
}

// TestConfirmedWritesShareTheNextWAIT: a WAIT follows the first write on
// its connection; the writes sent while it is in flight go out at once,
// without one of their own, and the next WAIT follows them as soon as the
// first is answered. A write is answered with its own WAIT's verdict, not
// before.
func TestConfirmedWritesShareTheNextWAIT(t *testing.T) {
	srv := newWaitServer(t)
	p := confirmedPipeline(t, srv)
	a, b := make(answers, 1), make(answers, 1)

	start(t, p, "a", a)
	got := srv.await(2)
	if got[0] != "SET a v" || !strings.HasPrefix(got[1], "WAIT 1 ") {
		t.Fatalf("received %q, want SET a, then WAIT 1", got)
	}
	if ms, _ := strconv.Atoi(strings.Fields(got[1])[2]); ms < 8000 || ms > 9000 {
		t.Fatalf("WAIT's timeout %d ms, want nine tenths of the 10 s its write has left", ms)
	}
	unanswered(t, a, "a")

	start(t, p, "b", b)
	blocked := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		c, _ := newCall([]string{"SET"}, []string{"c"}, []string{"v"})
		c.confirm = true
		_, conf, err := p.run(ctx, c)
		if err == nil {
			err = conf.Wait(ctx)
		}
		blocked <- err
	}()
	srv.await(4) // b and c, behind the WAIT in flight
	unanswered(t, b, "b")

	srv.answer(1)
	if err := <-a; err != nil {
		t.Fatalf("a: %v, want confirmed", err)
	}
	got = srv.await(5)
	if !strings.HasPrefix(got[4], "WAIT 1 ") {
		t.Fatalf("received %q, want the writes sent meanwhile, then one WAIT for both", got)
	}
	unanswered(t, b, "b")

	srv.answer(0) // too few replicas
	if err := <-b; !errors.Is(err, errJudged) {
		t.Fatalf("b: %v, want the judge's verdict", err)
	}
	if err := <-blocked; !errors.Is(err, errJudged) {
		t.Fatalf("c: %v, want the judge's verdict", err)
	}
}

// TestConfirmationFailsWithItsConnection: a write whose connection is lost
// before its WAIT is answered fails, though the write itself was
// answered; the next write goes on a new connection, with its own WAIT.
func TestConfirmationFailsWithItsConnection(t *testing.T) {
	srv := newWaitServer(t)
	p := confirmedPipeline(t, srv)
	a, b := make(answers, 1), make(answers, 1)

	start(t, p, "a", a)
	srv.await(2)
	srv.hangUp()
	if err := <-a; !errors.Is(err, errJudged) || !errors.Is(err, ErrConnectionLost) {
		t.Fatalf("a: %v, want unconfirmed: connection lost", err)
	}

	start(t, p, "b", b)
	if got := srv.await(4); got[2] != "SET b v" || !strings.HasPrefix(got[3], "WAIT 1 ") {
		t.Fatalf("received %q, want SET b and its WAIT", got)
	}
	srv.answer(1)
	if err := <-b; err != nil {
		t.Fatalf("b: %v, want confirmed", err)
	}
	if n := p.dials.Load(); n != 2 {
		t.Fatalf("%d connections dialed, want 2", n)
	}
}

// TestConfirmationFailsOnClose: a write whose WAIT is unanswered is
// answered when the pipeline stops: unconfirmed, or closed before its own
// reply came.
func TestConfirmationFailsOnClose(t *testing.T) {
	srv := newWaitServer(t)
	p := confirmedPipeline(t, srv)
	a := make(answers, 1)
	start(t, p, "a", a)
	srv.await(2)
	p.stop()
	if err := <-a; !errors.Is(err, ErrClosed) {
		t.Fatalf("a: %v, want closed", err)
	}
}
