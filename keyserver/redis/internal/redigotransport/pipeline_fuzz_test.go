package redigotransport

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	redigo "github.com/gomodule/redigo/redis"
)

// FuzzPipelineReplies puts arbitrary bytes where a Redis server's replies
// belong: a pipelined connection whose "server" reads the commands and
// answers with data, then hangs up (or, with hold, stays silent). Every
// call must return, by its deadline plus the watchdog's limit, an error or
// a well-formed reply; nothing may panic; Stop must find every call
// settled and both goroutines of the pipeline ended.
func FuzzPipelineReplies(f *testing.F) {
	for _, seed := range []struct {
		data  string
		hold  bool
		calls uint8
	}{
		{"+OK\r\n", false, 1},
		{":1\r\n:0\r\n$5\r\ntoken\r\n", false, 3},
		{"*2\r\n$3\r\none\r\n:-1\r\n", true, 1},
		{"$-1\r\n*-1\r\n-ERR no\r\n", false, 3},
		{"-NOSCRIPT No matching script\r\n+OK\r\n", true, 2},
		{"*3\r\n$7\r\nmessage\r\n$1\r\nc\r\n$0\r\n\r\n", false, 1},
		{"+OK\r\n+OK\r\n+OK\r\n+OK\r\n", false, 2}, // more replies than calls
		{"$10\r\nshort\r\n", true, 1},              // a bulk cut short
		{"$99999999999999999999\r\n", false, 1},    // a length past int64
		{"*4000000000\r\n:1\r\n", false, 1},        // an array no server sends
		{"%1\r\n+a\r\n+b\r\n", false, 1},           // RESP3, which redigo does not read
		{"+" + string(make([]byte, 5000)) + "\r\n", false, 1},
		{"", true, 4},
	} {
		f.Add([]byte(seed.data), seed.hold, seed.calls)
	}
	f.Fuzz(func(t *testing.T, data []byte, hold bool, calls uint8) {
		const (
			deadline = 20 * time.Millisecond
			overdue  = 5 * time.Millisecond
			bound    = 10 * time.Second // only a hang takes this long
		)
		srv := &byteServer{data: data, hold: hold}
		p := newPipeline(srv.dial, settings{maxPending: 4096})
		p.overdue = overdue

		n := 1 + int(calls%4)
		done := make(chan error, n)
		for i := 0; i < n; i++ {
			go func() {
				ctx, cancel := context.WithTimeout(context.Background(), deadline)
				defer cancel()
				reply, err := p.Do(ctx, []string{"EVALSHA"}, []string{"k"}, "token", "100")
				if err == nil {
					err = wellFormed(reply)
				}
				done <- err
			}()
		}
		timeout := time.NewTimer(bound)
		defer timeout.Stop()
		for i := 0; i < n; i++ {
			select {
			case err := <-done:
				if err != nil && errors.Is(err, errMalformed) {
					t.Fatal(err)
				}
			case <-timeout.C:
				t.Fatalf("a call did not return within %v of its %v deadline", bound, deadline)
			}
		}
		stopped := make(chan struct{})
		go func() { p.stop(); close(stopped) }()
		select {
		case <-stopped:
		case <-timeout.C:
			t.Fatalf("the pipeline did not stop within %v", bound)
		}
		srv.wait()
		if left := p.pending.Load(); left != 0 {
			t.Fatalf("%d calls left unsettled after stop", left)
		}
	})
}

// errMalformed marks a reply the pipeline should never hand a caller.
var errMalformed = errors.New("malformed reply")

// wellFormed checks that reply is made only of what a normalized reply
// holds: nil, an integer, a string, or an array of those.
func wellFormed(reply any) error {
	switch r := reply.(type) {
	case nil, int64, string:
		return nil
	case []any:
		for _, e := range r {
			if err := wellFormed(e); err != nil {
				return err
			}
		}
		return nil
	}
	return fmt.Errorf("%w: a %T", errMalformed, reply)
}

// byteServer is the "server" of FuzzPipelineReplies: each connection
// dialed to it reads and drops the commands, writes data, and then hangs
// up, or with hold waits for the client to hang up. It accepts three
// connections, then refuses to be dialed.
type byteServer struct {
	data []byte
	hold bool

	mu    sync.Mutex
	dials int
	wg    sync.WaitGroup
}

func (s *byteServer) dial(context.Context) (redigo.Conn, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.dials == 3 {
		return nil, errors.New("refused: three dials already")
	}
	s.dials++
	client, server := net.Pipe()
	s.wg.Add(2)
	go func() {
		defer s.wg.Done()
		io.Copy(io.Discard, server) //nolint:errcheck // until either side closes
	}()
	go func() {
		defer s.wg.Done()
		if _, err := server.Write(s.data); err == nil && s.hold {
			return // the client closes both ends when it gives up
		}
		server.Close() //nolint:errcheck // hanging up is the point
	}()
	return redigo.NewConn(guardReplies(client), 0, 0), nil
}

// wait waits for the goroutines of every connection dialed.
func (s *byteServer) wait() { s.wg.Wait() }
