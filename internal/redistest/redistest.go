// Package redistest starts throwaway redis-server processes for tests, on
// free loopback ports, each in its own temporary directory with persistence
// off, so that no dump.rdb or AOF file ever lands in the source tree. Nodes
// can be killed, paused (SIGSTOP), resumed and restarted empty, as after a
// crash without fsync, or, started WithAppendFsyncAlways, restarted with
// every acknowledged write. Everything is stopped when the test ends.
//
// The server binary is redis-server from PATH, or the one the environment
// variable GOREDLOCK_REDIS_SERVER names (a path, or a name looked up on
// PATH): another build of Redis, or an engine that takes redis-server's
// flags and prints its ready line, such as valkey-server. `make
// test-engines` runs the Redis suites once per engine that way.
//
// When the server is not installed (or GOREDLOCK_REDIS_SERVER names no
// executable), tests fail with a hint if the CI environment variable is
// set, and skip with that hint otherwise.
package redistest

import (
	"bytes"
	"cmp"
	"crypto/tls"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Option configures the nodes of Start.
type Option func(*config)

type config struct {
	password string
	tls      bool
	fsync    bool
	cluster  bool
	fresh    bool
	extra    []string
}

// WithPassword makes every node require password (requirepass).
func WithPassword(password string) Option { return func(c *config) { c.password = password } }

// WithTLS makes every node speak TLS only, with a certificate made for the
// test; Cluster.TLSConfig trusts it.
func WithTLS() Option { return func(c *config) { c.tls = true } }

// WithAppendFsyncAlways makes every node keep an append-only file in its
// temporary directory and fsync it before each reply (appendonly yes,
// appendfsync always), so that a node killed with SIGKILL comes back from
// Restart or Revive with every write it acknowledged: the persistence
// under which restarting a Redlock server at once is safe.
func WithAppendFsyncAlways() Option { return func(c *config) { c.fsync = true } }

// WithoutHistory starts the nodes as a brand-new deployment: without the
// marker that Start otherwise sets as if the nodes had held their data for
// an hour, so that a client's first grants wait out the quarantine of a
// store that may have just lost its data.
func WithoutHistory() Option { return func(c *config) { c.fresh = true } }

// Cluster is a set of independent Redis nodes.
type Cluster struct {
	Nodes []*Node
	certs *certs
}

// Node is one redis-server process.
type Node struct {
	t    testing.TB
	dir  string
	port int
	args []string

	ready    string      // what its log says once it is ready; "" for a redis-server's usual line
	password string      // what Do authenticates with; "" for a node without one
	tls      *tls.Config // what Do speaks TLS with; nil for a node without it

	mu     sync.Mutex
	cmd    *exec.Cmd
	paused bool
}

const startTimeout = 10 * time.Second

// Start starts n nodes and stops them when t ends.
func Start(t testing.TB, n int, opts ...Option) *Cluster {
	t.Helper()
	bin := RequireServer(t)
	var cfg config
	for _, o := range opts {
		o(&cfg)
	}
	c := &Cluster{}
	if cfg.tls {
		c.certs = makeCerts(t)
	}
	for i := 0; i < n; i++ {
		node := &Node{t: t, dir: t.TempDir(), password: cfg.password, tls: c.TLSConfig()}
		var err error
		for try := 0; try < 5; try++ { // a free port can be taken before redis binds it
			node.port = freePort(t)
			node.args = node.config(bin, cfg, c.certs)
			if err = node.start(); err == nil {
				break
			}
		}
		if err != nil {
			t.Fatalf("redistest: starting node %d: %v", i, err)
		}
		t.Cleanup(node.stop)
		if cfg.cluster {
			node.serveAllSlots()
		}
		if !cfg.fresh {
			node.SetHistory(time.Hour)
		}
		c.Nodes = append(c.Nodes, node)
	}
	return c
}

// ServerEnv names the environment variable that selects the server binary
// in place of redis-server from PATH.
const ServerEnv = "GOREDLOCK_REDIS_SERVER"

// RequireServer returns the path of the server binary (GOREDLOCK_REDIS_SERVER,
// or redis-server from PATH), or ends the test: with a failure when CI is
// set, with a skip otherwise.
func RequireServer(t testing.TB) string {
	t.Helper()
	hint := "redis-server not found on PATH; install it with: apt-get install redis-server"
	name := "redis-server"
	if env := os.Getenv(ServerEnv); env != "" {
		name = env
		hint = ServerEnv + "=" + env + " names no executable server; unset it for redis-server from PATH, or build the engines with ../shared/servers/build.sh"
	}
	bin, err := exec.LookPath(name)
	if err == nil {
		return bin
	}
	if os.Getenv("CI") != "" {
		t.Fatal(hint)
	}
	t.Skip(hint)
	return ""
}

// URLs returns each node's redis:// (or rediss://) URL, with the password.
func (c *Cluster) URLs(password string) []string {
	urls := make([]string, len(c.Nodes))
	for i, n := range c.Nodes {
		urls[i] = n.URL(password)
	}
	return urls
}

// TLSConfig returns a client configuration that trusts the nodes'
// certificate; nil when the cluster does not use TLS.
func (c *Cluster) TLSConfig() *tls.Config {
	if c.certs == nil {
		return nil
	}
	return &tls.Config{RootCAs: c.certs.pool, ServerName: "localhost", MinVersion: tls.VersionTLS12}
}

// Addr returns the node's host:port.
func (n *Node) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(n.port)) }

// URL returns the node's URL, with password if not empty.
func (n *Node) URL(password string) string {
	scheme := "redis"
	for _, a := range n.args {
		if a == "--tls-port" {
			scheme = "rediss"
		}
	}
	user := ""
	if password != "" {
		user = ":" + password + "@"
	}
	return fmt.Sprintf("%s://%s%s", scheme, user, n.Addr())
}

// Kill ends the node with SIGKILL, as a crash would.
func (n *Node) Kill() {
	n.t.Helper()
	n.mu.Lock()
	defer n.mu.Unlock()
	n.killLocked()
}

// Pause stops the node with SIGSTOP: connections stay open, nothing
// answers.
func (n *Node) Pause() { n.signal(syscall.SIGSTOP, true) }

// Resume continues a paused node with SIGCONT.
func (n *Node) Resume() { n.signal(syscall.SIGCONT, false) }

// Restart kills the node and starts it again at once on the same port:
// empty, as after a crash without fsync, unless the cluster was started
// WithAppendFsyncAlways.
func (n *Node) Restart() {
	n.t.Helper()
	n.mu.Lock()
	defer n.mu.Unlock()
	n.killLocked()
	if err := n.startLocked(); err != nil {
		n.t.Fatalf("redistest: restarting %s: %v", n.Addr(), err)
	}
}

// RestartAfter kills the node, waits d and starts it again on the same
// port; empty unless the cluster was started WithAppendFsyncAlways. With d
// longer than the largest TTL in use, this is the restart under which
// Redlock stays safe without persistence.
func (n *Node) RestartAfter(d time.Duration) {
	n.t.Helper()
	n.Kill()
	time.Sleep(d)
	n.Revive()
}

// Revive starts a node that Kill stopped again, on the same port, with
// what its persistence kept: nothing unless the cluster was started
// WithAppendFsyncAlways. It ends the test if the node is running.
func (n *Node) Revive() {
	n.t.Helper()
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cmd != nil {
		n.t.Fatalf("redistest: reviving %s: it is running", n.Addr())
	}
	if err := n.startLocked(); err != nil {
		n.t.Fatalf("redistest: reviving %s: %v", n.Addr(), err)
	}
}

// Running reports whether the node's process is up (paused or not).
func (n *Node) Running() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.cmd != nil
}

func (n *Node) signal(sig syscall.Signal, paused bool) {
	n.t.Helper()
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cmd == nil {
		n.t.Fatalf("redistest: %s is not running", n.Addr())
	}
	if err := n.cmd.Process.Signal(sig); err != nil {
		n.t.Fatalf("redistest: signalling %s: %v", n.Addr(), err)
	}
	n.paused = paused
}

func (n *Node) killLocked() {
	if n.cmd == nil {
		return
	}
	if n.paused {
		n.cmd.Process.Signal(syscall.SIGCONT) //nolint:errcheck // it is killed next
		n.paused = false
	}
	n.cmd.Process.Kill() //nolint:errcheck // it may have exited already
	n.cmd.Wait()         //nolint:errcheck // killed: the exit status says so
	n.cmd = nil
}

func (n *Node) stop() {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.killLocked()
}

func (n *Node) start() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.startLocked()
}

// startLocked starts redis-server and waits until its log says it is ready.
func (n *Node) startLocked() error {
	logFile := filepath.Join(n.dir, "redis.log")
	os.Remove(logFile) //nolint:errcheck // absent on the first start
	cmd := exec.Command(n.args[0], n.args[1:]...)
	cmd.Dir = n.dir
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		return err
	}
	n.cmd = cmd
	deadline := time.Now().Add(startTimeout)
	for time.Now().Before(deadline) {
		log, _ := os.ReadFile(logFile)
		if bytes.Contains(log, []byte(cmp.Or(n.ready, "Ready to accept connections"))) {
			return nil
		}
		if bytes.Contains(log, []byte("# ")) && (bytes.Contains(log, []byte("Address already in use")) || bytes.Contains(log, []byte("Failed"))) {
			n.killLocked()
			return fmt.Errorf("redis-server on port %d failed:\n%s", n.port, log)
		}
		time.Sleep(5 * time.Millisecond)
	}
	log, _ := os.ReadFile(logFile)
	n.killLocked()
	return fmt.Errorf("redis-server on port %d not ready after %v:\n%s", n.port, startTimeout, log)
}

// config returns the command line of a node: loopback only, no
// persistence unless asked for, everything it writes in its own directory.
func (n *Node) config(bin string, cfg config, c *certs) []string {
	appendOnly := []string{"--appendonly", "no"}
	if cfg.fsync {
		appendOnly = []string{"--appendonly", "yes", "--appendfsync", "always"}
	}
	args := []string{bin,
		"--bind", "127.0.0.1",
		"--dir", n.dir,
		"--logfile", filepath.Join(n.dir, "redis.log"),
		"--save", "",
	}
	args = append(args, appendOnly...)
	args = append(args,
		"--daemonize", "no",
		"--protected-mode", "no",
		"--loglevel", "notice",
	)
	port := strconv.Itoa(n.port)
	if c != nil {
		args = append(args, "--port", "0", "--tls-port", port,
			"--tls-cert-file", c.certFile, "--tls-key-file", c.keyFile,
			"--tls-ca-cert-file", c.caFile, "--tls-auth-clients", "no")
	} else {
		args = append(args, "--port", port)
	}
	if cfg.password != "" {
		args = append(args, "--requirepass", cfg.password)
	}
	if cfg.cluster {
		args = append(args, "--cluster-enabled", "yes", "--cluster-config-file", filepath.Join(n.dir, "nodes.conf"))
	}
	return append(args, cfg.extra...)
}

// handedOut holds the ports freePort gave in this process: a node that a
// test killed must leave its port closed (a test reads "connection
// refused" there), not handed to a node that another test starts.
var handedOut sync.Map

// freePort returns a free loopback port that no node of this process has
// had.
func freePort(t testing.TB) int {
	t.Helper()
	for {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatalf("redistest: finding a free port: %v", err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		l.Close()
		if _, had := handedOut.LoadOrStore(port, true); !had {
			return port
		}
	}
}
