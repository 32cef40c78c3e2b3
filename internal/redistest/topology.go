package redistest

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	redigo "github.com/gomodule/redigo/redis"

	"github.com/goredlock/goredlock/internal/layout"
)

// WithClusterMode makes every node a Redis Cluster of its own, one master
// that serves every slot: enough for a client to speak the Cluster
// protocol (routing by slot, MOVED, CROSSSLOT) against it.
func WithClusterMode() Option { return func(c *config) { c.cluster = true } }

// WithArgs adds redis-server command-line arguments to every node, such as
// "--enable-debug-command", "yes".
func WithArgs(args ...string) Option { return func(c *config) { c.extra = append(c.extra, args...) } }

// Do runs one command on the node over a connection of its own,
// authenticated with the node's password (WithPassword) if it has one, and
// returns the reply as redigo reads it; it ends the test on an error other
// than an error reply, which it returns.
func (n *Node) Do(cmd string, args ...any) (any, error) {
	n.t.Helper()
	return n.doIn(0, cmd, args...)
}

// doIn is Do in database db; selecting it is an error reply where the
// node has no such database.
func (n *Node) doIn(db int, cmd string, args ...any) (any, error) {
	n.t.Helper()
	conn, err := redigo.Dial("tcp", n.Addr(), redigo.DialConnectTimeout(5*time.Second), redigo.DialReadTimeout(10*time.Second),
		redigo.DialPassword(n.password), redigo.DialUseTLS(n.tls != nil), redigo.DialTLSConfig(n.tls))
	if err == nil && db != 0 {
		if _, err := conn.Do("SELECT", db); err != nil {
			conn.Close()
			return nil, err
		}
	}
	if err != nil {
		n.t.Fatalf("redistest: connecting to %s: %v", n.Addr(), err)
	}
	defer conn.Close()
	reply, err := conn.Do(cmd, args...)
	if _, isReply := err.(redigo.Error); err != nil && !isReply {
		n.t.Fatalf("redistest: %s on %s: %v", cmd, n.Addr(), err)
	}
	return reply, err
}

// MustDo is Do that ends the test on an error reply too.
func (n *Node) MustDo(cmd string, args ...any) any {
	n.t.Helper()
	reply, err := n.Do(cmd, args...)
	if err != nil {
		n.t.Fatalf("redistest: %s on %s: %v", cmd, n.Addr(), err)
	}
	return reply
}

// SetHistory sets the node's marker (see layout.IncarnationKey) in each
// of its databases as if its store had held its data for age: what a
// deployment that has run for a while looks like to a client's
// quarantine. Start does it with an hour unless WithoutHistory; a restart
// empty loses it, as it must.
func (n *Node) SetHistory(age time.Duration) {
	n.t.Helper()
	id := fmt.Sprintf("redistest-%d-%d", n.port, time.Now().UnixNano())
	cmd, args := layout.MarkerAged(id, age)
	for db := 0; db < 16; db++ {
		// A Cluster node has database 0 only.
		if _, err := n.doIn(db, cmd, args...); err != nil {
			if db == 0 {
				n.t.Fatalf("redistest: setting the marker on %s: %v", n.Addr(), err)
			}
			return
		}
	}
}

// RunID returns the node's run id as INFO server reports it: what a key
// server's incarnation must carry, read apart from the server under test.
func (n *Node) RunID() string {
	n.t.Helper()
	info, err := redigo.String(n.MustDo("INFO", "server"), nil)
	if err != nil {
		n.t.Fatalf("redistest: INFO server on %s: %v", n.Addr(), err)
	}
	for _, line := range strings.Split(info, "\n") {
		if id, ok := strings.CutPrefix(strings.TrimSpace(line), "run_id:"); ok {
			return id
		}
	}
	n.t.Fatalf("redistest: INFO server on %s has no run_id", n.Addr())
	return ""
}

// serveAllSlots gives a Cluster-mode node every slot and waits until the
// cluster says it is ok.
func (n *Node) serveAllSlots() {
	n.t.Helper()
	n.MustDo("CLUSTER", "ADDSLOTSRANGE", 0, 16383)
	waitFor(n.t, "cluster_state:ok on "+n.Addr(), func() bool {
		info, _ := redigo.String(n.Do("CLUSTER", "INFO"))
		return strings.Contains(info, "cluster_state:ok")
	})
}

// ReplicaOf makes n a replica of master and waits until it is in sync.
func (n *Node) ReplicaOf(master *Node) {
	n.t.Helper()
	host, port, _ := net.SplitHostPort(master.Addr())
	n.MustDo("REPLICAOF", host, port)
	waitFor(n.t, n.Addr()+" to sync with "+master.Addr(), func() bool {
		info, _ := redigo.String(n.Do("INFO", "replication"))
		return strings.Contains(info, "master_link_status:up")
	})
	// After a diskless sync the master counts the replica for WAIT only
	// once it acknowledged (its replication cron, up to a second later):
	// a WAIT before then times out with 0 acknowledgements. Every
	// replica the master lists, this one among them, must acknowledge.
	listed := "port=" + strconv.Itoa(n.port) + ","
	waitFor(n.t, master.Addr()+" to count "+n.Addr()+" for WAIT", func() bool {
		info, _ := redigo.String(master.Do("INFO", "replication"))
		_, rest, _ := strings.Cut(info, "connected_slaves:")
		k, err := strconv.Atoi(strings.TrimSpace(strings.SplitN(rest, "\n", 2)[0]))
		if err != nil || !strings.Contains(info, listed) {
			return false
		}
		acked, _ := redigo.Int(master.Do("WAIT", strconv.Itoa(k), "100"))
		return acked >= k
	})
}

// Sentinel is one redis-server in sentinel mode.
type Sentinel struct{ *Node }

// StartSentinel starts a sentinel that watches master under name, alone
// (quorum 1), declares it down after downAfter, and knows of its replicas
// before it returns. It is stopped when t ends.
func StartSentinel(t testing.TB, master *Node, name string, downAfter time.Duration, replicas ...*Node) *Sentinel {
	t.Helper()
	bin := RequireServer(t)
	host, port, _ := net.SplitHostPort(master.Addr())
	s := &Sentinel{&Node{t: t, dir: t.TempDir(), ready: "+monitor master " + name}}
	conf := fmt.Sprintf("sentinel monitor %s %s %s 1\nsentinel down-after-milliseconds %s %d\nsentinel failover-timeout %s 5000\n",
		name, host, port, name, downAfter.Milliseconds(), name)
	var err error
	for try := 0; try < 5; try++ {
		s.port = freePort(t)
		if s.args, err = sentinelArgs(bin, s.dir, s.port, conf); err == nil {
			if err = s.start(); err == nil {
				break
			}
		}
	}
	if err != nil {
		t.Fatalf("redistest: starting a sentinel: %v", err)
	}
	t.Cleanup(s.stop)
	for _, r := range replicas {
		_, rport, _ := net.SplitHostPort(r.Addr())
		waitFor(t, "the sentinel to find replica "+r.Addr(), func() bool {
			reply, _ := s.Do("SENTINEL", "REPLICAS", name)
			return strings.Contains(Text(reply), rport)
		})
	}
	return s
}

// Text writes a reply as text, bulk strings as strings, for tests that
// look for a word in it.
func Text(reply any) string {
	switch r := reply.(type) {
	case []byte:
		return string(r)
	case []any:
		parts := make([]string, len(r))
		for i, e := range r {
			parts[i] = Text(e)
		}
		return "[" + strings.Join(parts, " ") + "]"
	}
	return fmt.Sprint(reply)
}

func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatalf("redistest: timed out waiting for %s", what)
}

// sentinelArgs writes a sentinel's configuration file, which it must be
// able to rewrite, and returns its command line.
func sentinelArgs(bin, dir string, port int, conf string) ([]string, error) {
	file := filepath.Join(dir, "sentinel.conf")
	if err := os.WriteFile(file, []byte(conf), 0o600); err != nil {
		return nil, err
	}
	return []string{bin, file, "--sentinel", "--port", strconv.Itoa(port), "--bind", "127.0.0.1",
		"--dir", dir, "--logfile", filepath.Join(dir, "redis.log"), "--protected-mode", "no", "--daemonize", "no"}, nil
}
