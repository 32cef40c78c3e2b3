package chaos

import (
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"syscall"
	"testing"
	"time"
)

// echoServer answers every byte with itself and records what it received.
type echoServer struct {
	ln net.Listener
	wg sync.WaitGroup

	mu    sync.Mutex
	got   []byte
	conns []net.Conn
}

func startEcho(t *testing.T) *echoServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	e := &echoServer{ln: ln}
	e.wg.Add(1)
	go func() {
		defer e.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			e.mu.Lock()
			e.conns = append(e.conns, c)
			e.mu.Unlock()
			e.wg.Add(1)
			go func() {
				defer e.wg.Done()
				defer c.Close()
				buf := make([]byte, 1024)
				for {
					n, err := c.Read(buf)
					if n > 0 {
						e.mu.Lock()
						e.got = append(e.got, buf[:n]...)
						e.mu.Unlock()
						c.Write(buf[:n]) //nolint:errcheck // the reader sees what arrived
					}
					if err != nil {
						return
					}
				}
			}()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		e.mu.Lock()
		for _, c := range e.conns {
			c.Close()
		}
		e.mu.Unlock()
		e.wg.Wait()
	})
	return e
}

func (e *echoServer) received() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return string(e.got)
}

func startProxy(t *testing.T, target string) *Proxy {
	t.Helper()
	p, err := Listen(target)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

func dial(t *testing.T, p *Proxy) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// roundTrip writes msg and reads it back, within limit.
func roundTrip(c net.Conn, msg string, limit time.Duration) (time.Duration, error) {
	start := time.Now()
	c.SetDeadline(start.Add(limit)) //nolint:errcheck // a net.Conn from Dial
	if _, err := c.Write([]byte(msg)); err != nil {
		return 0, err
	}
	buf := make([]byte, len(msg))
	if _, err := io.ReadFull(c, buf); err != nil {
		return time.Since(start), err
	}
	if string(buf) != msg {
		return 0, errors.New("echo mismatch: " + string(buf))
	}
	return time.Since(start), nil
}

func TestProxyForwards(t *testing.T) {
	e := startEcho(t)
	p := startProxy(t, e.ln.Addr().String())
	c := dial(t, p)
	for _, msg := range []string{"ping", "a longer message"} {
		if _, err := roundTrip(c, msg, 2*time.Second); err != nil {
			t.Fatalf("round trip of %q: %v", msg, err)
		}
	}
	if p.Open() != 1 {
		t.Fatalf("Open() = %d, want 1", p.Open())
	}
}

func TestProxyLatency(t *testing.T) {
	e := startEcho(t)
	p := startProxy(t, e.ln.Addr().String())
	c := dial(t, p)
	fast, err := roundTrip(c, "x", 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}

	const d = 100 * time.Millisecond
	p.SetLatency(d)
	slow, err := roundTrip(c, "y", 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if slow < 2*d {
		t.Fatalf("round trip with %v each way took %v, want at least %v", d, slow, 2*d)
	}

	p.SetLatency(0)
	again, err := roundTrip(c, "z", 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if again >= d {
		t.Fatalf("round trip after removing the latency took %v (%v before adding it)", again, fast)
	}
}

func TestProxyBlackHoleDeliversWhenHealed(t *testing.T) {
	e := startEcho(t)
	p := startProxy(t, e.ln.Addr().String())
	c := dial(t, p)
	if _, err := roundTrip(c, "before|", 2*time.Second); err != nil {
		t.Fatal(err)
	}

	p.BlackHole()
	_, err := roundTrip(c, "held|", 200*time.Millisecond)
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("round trip through a black hole: %v, want a timeout", err)
	}
	if got := e.received(); got != "before|" {
		t.Fatalf("the target received %q through a black hole", got)
	}
	// A second client connects and sends while the hole lasts, then gives
	// up: what it sent still arrives after the heal.
	late := dial(t, p)
	if _, err := late.Write([]byte("late|")); err != nil {
		t.Fatal(err)
	}
	late.Close()

	p.Heal()
	c.SetDeadline(time.Now().Add(2 * time.Second)) //nolint:errcheck // a net.Conn from Dial
	buf := make([]byte, len("held|"))
	if _, err := io.ReadFull(c, buf); err != nil || string(buf) != "held|" {
		t.Fatalf("after the heal the held reply is %q, %v", buf, err)
	}
	deadline := time.Now().Add(2 * time.Second)
	for e.received() != "before|held|late|" && e.received() != "before|late|held|" {
		if time.Now().After(deadline) {
			t.Fatalf("after the heal the target received %q, want every held byte", e.received())
		}
		time.Sleep(5 * time.Millisecond)
	}
	if _, err := roundTrip(c, "after", 2*time.Second); err != nil {
		t.Fatalf("after the heal: %v", err)
	}
}

func TestProxyReset(t *testing.T) {
	e := startEcho(t)
	p := startProxy(t, e.ln.Addr().String())
	c := dial(t, p)
	if _, err := roundTrip(c, "x", 2*time.Second); err != nil {
		t.Fatal(err)
	}
	if n := p.Reset(); n != 1 {
		t.Fatalf("Reset() = %d, want 1 connection", n)
	}
	_, err := roundTrip(c, "y", 2*time.Second)
	if !errors.Is(err, syscall.ECONNRESET) && !errors.Is(err, syscall.EPIPE) {
		t.Fatalf("after Reset: %v, want a connection reset", err)
	}
	c2 := dial(t, p)
	if _, err := roundTrip(c2, "z", 2*time.Second); err != nil {
		t.Fatalf("a new connection after Reset: %v", err)
	}
}

func TestProxyTargetDown(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	target := ln.Addr().String()
	ln.Close() // nothing listens there any more
	p := startProxy(t, target)
	// The reset can come before the connect returns, or at the first read.
	c, err := net.Dial("tcp", p.Addr())
	if err == nil {
		defer c.Close()
		_, err = roundTrip(c, "x", 2*time.Second)
	}
	if err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("through a proxy to a closed port: %v, want the connection ended", err)
	}
}

func TestProxyCloseEndsEverything(t *testing.T) {
	e := startEcho(t)
	p, err := Listen(e.ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	c := dial(t, p)
	if _, err := roundTrip(c, "x", 2*time.Second); err != nil {
		t.Fatal(err)
	}
	p.BlackHole()
	c.Write([]byte("held")) //nolint:errcheck // dropped by Close
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if p.Open() != 0 {
		t.Fatalf("Open() after Close = %d", p.Open())
	}
	if _, err := net.DialTimeout("tcp", p.Addr(), time.Second); err == nil {
		t.Fatal("a closed proxy accepted a connection")
	}
}

func TestProxyRefuseThenReopen(t *testing.T) {
	e := startEcho(t)
	p := startProxy(t, e.ln.Addr().String())
	c := dial(t, p)
	if _, err := roundTrip(c, "x", 2*time.Second); err != nil {
		t.Fatal(err)
	}
	p.Refuse()
	if _, err := roundTrip(c, "y", 2*time.Second); err == nil {
		t.Fatal("a connection open before Refuse still carries bytes")
	}
	for deadline := time.Now().Add(2 * time.Second); p.Open() != 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("Open() after Refuse = %d, want 0", p.Open())
		}
	}
	if c2, err := net.DialTimeout("tcp", p.Addr(), time.Second); !errors.Is(err, syscall.ECONNREFUSED) {
		if c2 != nil {
			c2.Close()
		}
		t.Fatalf("connect while refusing: %v, want it refused", err)
	}
	p.Refuse() // again: nothing changes
	if err := p.Reopen(); err != nil {
		t.Fatal(err)
	}
	if err := p.Reopen(); err != nil { // again: nothing changes
		t.Fatal(err)
	}
	if _, err := roundTrip(dial(t, p), "z", 2*time.Second); err != nil {
		t.Fatalf("after Reopen, on the same port: %v", err)
	}
}

func TestProxyClosesWhileRefusing(t *testing.T) {
	e := startEcho(t)
	p, err := Listen(e.ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	p.Refuse()
	if err := p.Close(); err != nil {
		t.Fatalf("Close of a refusing proxy: %v", err)
	}
	if err := p.Reopen(); err != nil {
		t.Fatalf("Reopen after Close: %v", err)
	}
	if c, err := net.DialTimeout("tcp", p.Addr(), time.Second); err == nil {
		c.Close()
		t.Fatal("a closed proxy listens again after Reopen")
	}
}
