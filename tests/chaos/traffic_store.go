package chaos

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/goredlock/goredlock/fence/redisfence"
)

// Store is the storage a lock protects, as a service on a loopback port
// that the client processes write to while they hold a lock: the place
// where a holder that was stopped past its validity does its harm. It
// keeps what it is written in a data Redis (not one of the lock's nodes),
// and checks fencing tokens as a careful store would, through the Redis
// guard (fence/redisfence): a write carrying a token lower than one the
// data Redis already took for the name is refused there, and changes
// nothing; a write without a token (fence 0) bypasses the guard, with a
// plain SET, and is always accepted, since the store has nothing to check
// it by.
//
// Independently of the tokens it records, for each write, whether it was
// stale: whether a holder granted the name later had already written.
// That is what the fencing must catch, and what an unfenced store lets
// through; CheckWrites holds the guard's verdicts against it.
type Store struct {
	h      *History
	origin int64 // h's zero on CLOCK_MONOTONIC, in nanoseconds
	ln     net.Listener
	pool   *redis.Pool // the data Redis's
	guard  *redisfence.Guard

	mu     sync.Mutex       // held across a write's Redis call, so that writes reach Redis in the order their staleness is judged
	latest map[string]int64 // the latest grant time of a writer, by name
	writes []Write
	conns  map[net.Conn]struct{}
	closed bool

	wg sync.WaitGroup // the accept loop and one goroutine per connection
}

// Write is one write the store received.
type Write struct {
	Client   int
	Token    string // of the writer's grant; never printed
	Name     string
	Fence    uint64        // 0: an unfenced write
	Granted  time.Duration // when the writer's grant was returned to it, on the history's clock
	At       time.Duration // when the store received the write, on the history's clock
	Stale    bool          // a holder granted the name after the writer had written first
	Accepted bool          // the data Redis took it
	Refused  bool          // the guard refused it for its fence (redisfence.ErrStale)
	Err      string        // the data Redis failed: whether it took the write is not known
}

// writeRequest is a write as a client process sends it, one JSON line;
// the store answers "ok", "rejected" or "error: ..." on a line.
type writeRequest struct {
	Client  int
	Token   string
	Name    string
	Fence   uint64
	Granted int64 // CLOCK_MONOTONIC nanoseconds
}

// storeTimeout bounds one write's call to the data Redis, on loopback.
const storeTimeout = 5 * time.Second

// ListenStore starts a store on a free loopback port, keeping its data
// in the Redis at data (host:port). Its records are on h's clock, whose
// zero is origin on CLOCK_MONOTONIC.
func ListenStore(h *History, origin int64, data string) (*Store, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	pool := &redis.Pool{
		DialContext: func(ctx context.Context) (redis.Conn, error) {
			return redis.DialContext(ctx, "tcp", data, redis.DialConnectTimeout(storeTimeout))
		},
		MaxIdle: 4,
	}
	s := &Store{h: h, origin: origin, ln: ln, pool: pool, guard: redisfence.New(pool),
		latest: make(map[string]int64), conns: make(map[net.Conn]struct{})}
	s.wg.Add(1)
	go s.accept()
	return s, nil
}

// Addr returns the store's host:port.
func (s *Store) Addr() string { return s.ln.Addr().String() }

// Writes returns a copy of the writes received so far.
func (s *Store) Writes() []Write {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Write(nil), s.writes...)
}

// Close stops the store, ends its connections and waits for its
// goroutines.
func (s *Store) Close() error {
	s.mu.Lock()
	s.closed = true
	for c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
	err := s.ln.Close()
	s.wg.Wait()
	return errors.Join(err, s.pool.Close())
}

func (s *Store) accept() {
	defer s.wg.Done()
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return // closed
		}
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			c.Close()
			return
		}
		s.conns[c] = struct{}{}
		s.mu.Unlock()
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.serve(c)
			s.mu.Lock()
			delete(s.conns, c)
			s.mu.Unlock()
			c.Close()
		}()
	}
}

// serve answers one connection's writes until it ends.
func (s *Store) serve(c net.Conn) {
	sc := bufio.NewScanner(c)
	for sc.Scan() {
		var req writeRequest
		if err := json.Unmarshal(sc.Bytes(), &req); err != nil {
			fmt.Fprintf(c, "error: %v\n", err)
			return
		}
		w := s.write(req)
		reply := "rejected\n"
		switch {
		case w.Err != "":
			reply = "error: " + w.Err + "\n"
		case w.Accepted:
			reply = "ok\n"
		}
		if _, err := c.Write([]byte(reply)); err != nil {
			return
		}
	}
}

// write applies one write to the data Redis, through the guard if it is
// fenced, and records it.
func (s *Store) write(req writeRequest) Write {
	s.mu.Lock()
	defer s.mu.Unlock()
	w := Write{Client: req.Client, Token: req.Token, Name: req.Name, Fence: req.Fence,
		Granted: time.Duration(req.Granted - s.origin), At: s.h.Now()}
	w.Stale = req.Granted < s.latest[req.Name]
	s.latest[req.Name] = max(s.latest[req.Name], req.Granted)

	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	key, value := dataKey(req.Name), []byte(fmt.Sprintf("client %d, fence %d", req.Client, req.Fence))
	var err error
	if req.Fence == 0 {
		err = s.unfenced(ctx, key, value)
	} else {
		err = s.guard.Set(ctx, key, value, req.Fence, 0)
	}
	switch {
	case err == nil:
		w.Accepted = true
	case errors.Is(err, redisfence.ErrStale):
		w.Refused = true
	default:
		w.Err = err.Error()
	}
	s.writes = append(s.writes, w)
	return w
}

// unfenced is an unfenced write: a plain SET, around the guard.
func (s *Store) unfenced(ctx context.Context, key string, value []byte) error {
	conn, err := s.pool.GetContext(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	_, err = redis.DoContext(conn, ctx, "SET", key, value)
	return err
}

// dataKey is the data Redis's key for the lock name name.
func dataKey(name string) string { return "chaos:data:" + name }

// storeClient is a client process's connection to the store.
type storeClient struct {
	conn net.Conn
	r    *bufio.Reader
}

func dialStore(addr string) (*storeClient, error) {
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return nil, err
	}
	return &storeClient{conn: c, r: bufio.NewReader(c)}, nil
}

// write sends one write and reports whether the store accepted it.
func (sc *storeClient) write(req writeRequest) (bool, error) {
	b, err := json.Marshal(req)
	if err != nil {
		return false, err
	}
	if _, err := sc.conn.Write(append(b, '\n')); err != nil {
		return false, err
	}
	line, err := sc.r.ReadString('\n')
	switch {
	case err != nil:
		return false, err
	case line == "ok\n":
		return true, nil
	case line == "rejected\n":
		return false, nil
	}
	return false, fmt.Errorf("store: %q", line)
}

func (sc *storeClient) Close() error { return sc.conn.Close() }

// WriteReport sums up the writes of a run against its grants.
type WriteReport struct {
	Fenced, Unfenced int // writes received
	// Late are writes received after their grant's Until: the holder was
	// stopped past its validity and wrote on when it resumed.
	Late int
	// FencedStale are fenced writes that came after a later holder's:
	// every one must have been refused by the guard. FencedStaleAccepted
	// are those that were not (each also a StaleWrite violation), a
	// write the data Redis failed on counted among them, as it may have
	// been taken.
	FencedStale, FencedStaleAccepted int
	// Refused are the fenced writes the guard refused, stale or not: a
	// fresh write refused would mean fences out of grant order.
	Refused int
	// UnfencedStale are unfenced writes that came after a later holder's,
	// which the store accepted: the known limit of a lease without
	// fencing.
	UnfencedStale int
	// Errors are writes the data Redis failed on.
	Errors int
}

// CheckWrites sums up writes against the grants of the history, and
// reports a StaleWrite violation for each fenced stale write the guard
// did not refuse.
func CheckWrites(writes []Write, grants []Grant) (WriteReport, []Violation) {
	byToken := make(map[string]Grant, len(grants))
	for _, g := range grants {
		byToken[g.Token] = g
	}
	var (
		r  WriteReport
		vs []Violation
	)
	for _, w := range writes {
		if g, ok := byToken[w.Token]; ok && g.Until != Never && w.At > g.Until {
			r.Late++
		}
		if w.Err != "" {
			r.Errors++
		}
		if w.Fence == 0 {
			r.Unfenced++
			if w.Stale {
				r.UnfencedStale++
			}
			continue
		}
		r.Fenced++
		if w.Refused {
			r.Refused++
		}
		if !w.Stale {
			continue
		}
		r.FencedStale++
		if !w.Refused {
			r.FencedStaleAccepted++
			how := "accepted"
			if w.Err != "" {
				how = "maybe taken (the data Redis failed: " + w.Err + ")"
			}
			vs = append(vs, Violation{Kind: StaleWrite, Name: w.Name, Detail: fmt.Sprintf(
				"client %d's write with fencing token %d, granted at %v, %s at %v after a later holder's write",
				w.Client, w.Fence, w.Granted.Round(time.Millisecond), how, w.At.Round(time.Millisecond))})
		}
	}
	return r, vs
}

// String sums the report up for the table.
func (r WriteReport) String() string {
	if r.Fenced+r.Unfenced == 0 {
		return "-"
	}
	s := fmt.Sprintf("fenced: %d of %d stale refused through the Redis guard (%d accepted), %d refused in all; unfenced: %d stale accepted; %d written past Until",
		r.FencedStale-r.FencedStaleAccepted, r.FencedStale, r.FencedStaleAccepted, r.Refused, r.UnfencedStale, r.Late)
	if r.Errors > 0 {
		s += fmt.Sprintf("; %d failed in the data Redis", r.Errors)
	}
	return s
}
