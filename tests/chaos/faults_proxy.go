package chaos

import (
	"fmt"
	"net"
	"sync"
	"time"
)

// Proxy forwards TCP connections from its own loopback port to one target,
// a Redis node, and injects the network's faults between the two: latency,
// a black hole that holds every byte and delivers it when healed (what a
// partition that heals does to TCP), and connection resets. Faults apply to
// the connections already open and to new ones alike.
//
// A black-holed proxy still accepts connections and dials the target: a
// client's connect succeeds and its request then hangs, as after a
// partition that began mid-connection. A refusing one (Refuse) has closed
// its port: a client's connect is refused, as by a host whose server is
// dead, until Reopen opens the same port again.
type Proxy struct {
	target string
	addr   string // the port it listens on, kept while it refuses

	mu       sync.Mutex
	ln       net.Listener // nil while it refuses
	latency  time.Duration
	holding  bool
	healed   chan struct{} // closed when the black hole ends; a new one per BlackHole
	links    map[*link]struct{}
	closed   bool
	refusing bool

	wg sync.WaitGroup // the accept loop and every link's goroutines
}

// dialTimeout bounds the proxy's connect to its target; a killed node
// refuses at once, so this only matters for a stopped host.
const dialTimeout = time.Second

// Listen starts a proxy to target on a free loopback port.
func Listen(target string) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Proxy{target: target, addr: ln.Addr().String(), ln: ln, healed: make(chan struct{}), links: make(map[*link]struct{})}
	close(p.healed)
	p.wg.Add(1)
	go p.accept(ln)
	return p, nil
}

// Addr returns the host:port clients should dial instead of the target.
func (p *Proxy) Addr() string { return p.addr }

// SetLatency delays every byte read from now on by d, in each direction,
// so a request and its reply take 2d more; 0 removes the delay. Bytes keep
// their order.
func (p *Proxy) SetLatency(d time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.latency = d
}

// BlackHole holds every byte, in both directions, from now until Heal;
// connections stay open and nothing is lost.
func (p *Proxy) BlackHole() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.holding {
		p.holding = true
		p.healed = make(chan struct{})
	}
}

// Heal ends the black hole: the held bytes are delivered, late, in order,
// also those a client sent before it gave up and closed its end.
func (p *Proxy) Heal() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.holding {
		p.holding = false
		close(p.healed)
	}
}

// Reset ends every open connection with a TCP reset on both sides,
// dropping what it held, and reports how many there were. New connections
// work as before.
func (p *Proxy) Reset() int {
	p.mu.Lock()
	links := make([]*link, 0, len(p.links))
	for l := range p.links {
		links = append(links, l)
	}
	p.mu.Unlock()
	for _, l := range links {
		l.reset()
	}
	return len(links)
}

// Retarget points the proxy at target from now on and resets every
// connection it carries: what a failover does to a deployment's address
// (a Sentinel-managed virtual IP, a managed service's endpoint).
func (p *Proxy) Retarget(target string) {
	p.mu.Lock()
	p.target = target
	p.mu.Unlock()
	p.Reset()
}

// Refuse closes the proxy's port, so that connects to it are refused, as
// by a host whose server is dead (a connect through a proxy that listens
// succeeds, and only then is the connection reset), and resets every
// connection it carries.
func (p *Proxy) Refuse() {
	p.mu.Lock()
	ln := p.ln
	if p.closed || p.refusing {
		p.mu.Unlock()
		return
	}
	p.ln, p.refusing = nil, true
	p.mu.Unlock()
	ln.Close() //nolint:errcheck // it refuses either way
	p.Reset()
}

// reopenFor bounds Reopen's tries to listen on the proxy's port again: a
// free port can be taken, briefly, as the local end of another
// connection.
const reopenFor = 2 * time.Second

// Reopen listens on the proxy's port again after Refuse.
func (p *Proxy) Reopen() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed || !p.refusing {
		return nil
	}
	deadline := time.Now().Add(reopenFor)
	for {
		ln, err := net.Listen("tcp", p.addr)
		if err == nil {
			p.ln, p.refusing = ln, false
			p.wg.Add(1)
			go p.accept(ln)
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("proxy to %s: listening on %s again: %w", p.target, p.addr, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Open returns the number of connections the proxy is carrying.
func (p *Proxy) Open() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.links)
}

// Close stops accepting, resets every connection and waits for the
// proxy's goroutines.
func (p *Proxy) Close() error {
	p.mu.Lock()
	p.closed = true
	ln := p.ln
	p.mu.Unlock()
	var err error
	if ln != nil { // nil: it refuses, its port already closed
		err = ln.Close()
	}
	p.Reset()
	p.wg.Wait()
	return err
}

func (p *Proxy) accept(ln net.Listener) {
	defer p.wg.Done()
	for {
		c, err := ln.Accept()
		if err != nil {
			return // closed
		}
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			p.serve(c.(*net.TCPConn))
		}()
	}
}

// serve connects client to the target and forwards until both directions
// are done or the link is reset.
func (p *Proxy) serve(client *net.TCPConn) {
	p.mu.Lock()
	target := p.target
	p.mu.Unlock()
	s, err := net.DialTimeout("tcp", target, dialTimeout)
	if err != nil {
		// The target is down: the client sees a reset, as it would see a
		// refused connect.
		client.SetLinger(0) //nolint:errcheck // closing anyway
		client.Close()
		return
	}
	l := &link{p: p, client: client, server: s.(*net.TCPConn), done: make(chan struct{})}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		l.reset()
		return
	}
	p.links[l] = struct{}{}
	p.mu.Unlock()

	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); l.pipe(l.client, l.server) }()
	go func() { defer wg.Done(); l.pipe(l.server, l.client) }()
	wg.Wait()
	l.close()
	p.mu.Lock()
	delete(p.links, l)
	p.mu.Unlock()
}

// link is one proxied connection: the client's end and the target's.
type link struct {
	p              *Proxy
	client, server *net.TCPConn
	done           chan struct{} // closed by reset
	once           sync.Once
}

// chunk is what one read returned, and when it may be delivered.
type chunk struct {
	data []byte
	due  time.Time
}

// queueLen bounds the chunks in flight per direction; a full queue stops
// reading, as a full TCP window would.
const queueLen = 256

// pipe copies src to dst through a queue, so that bytes can wait for their
// latency or for the black hole to heal while later bytes are still read.
// When src ends, dst's write side is shut once the queue has drained.
func (l *link) pipe(src, dst *net.TCPConn) {
	q := make(chan chunk, queueLen)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(q)
		buf := make([]byte, 32<<10)
		for {
			n, err := src.Read(buf)
			if n > 0 {
				c := chunk{data: append([]byte(nil), buf[:n]...), due: time.Now().Add(l.p.delay())}
				select {
				case q <- c:
				case <-l.done:
					return
				}
			}
			if err != nil {
				return
			}
		}
	}()
	defer wg.Wait()
	for c := range q {
		if !l.p.wait(c.due, l.done) {
			return
		}
		if _, err := dst.Write(c.data); err != nil {
			l.reset() // the other side is gone: so is this connection
			return
		}
	}
	dst.CloseWrite() //nolint:errcheck // the peer may have gone already
}

func (p *Proxy) delay() time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.latency
}

// wait blocks until a chunk due at due may be delivered: its latency has
// passed and no black hole holds it. It returns false if done closes first.
func (p *Proxy) wait(due time.Time, done <-chan struct{}) bool {
	for {
		p.mu.Lock()
		holding, healed := p.holding, p.healed
		p.mu.Unlock()
		if holding {
			select {
			case <-healed:
				continue
			case <-done:
				return false
			}
		}
		d := time.Until(due)
		if d <= 0 {
			return true
		}
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case <-done:
			t.Stop()
			return false
		}
		// Checked again: a black hole may have begun while it waited.
	}
}

// reset ends the link with a TCP reset on both ends.
func (l *link) reset() {
	l.once.Do(func() {
		close(l.done)
		for _, c := range []*net.TCPConn{l.client, l.server} {
			c.SetLinger(0) //nolint:errcheck // closing anyway
			c.Close()
		}
	})
}

// close ends a link whose two directions finished in order.
func (l *link) close() {
	l.once.Do(func() {
		close(l.done)
		l.client.Close()
		l.server.Close()
	})
}
