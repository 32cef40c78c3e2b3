package redistest

import (
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestClusterAndSentinel starts a Cluster-mode node that takes writes,
// and a sentinel that watches a master with a replica.
func TestClusterAndSentinel(t *testing.T) {
	c := Start(t, 1, WithClusterMode())
	if _, err := c.Nodes[0].Do("SET", "a", "b"); err != nil {
		t.Fatal(err)
	}
	nodes := Start(t, 2).Nodes
	nodes[1].ReplicaOf(nodes[0])
	s := StartSentinel(t, nodes[0], "locks", 300*time.Millisecond, nodes[1])
	if got := Text(s.MustDo("SENTINEL", "GET-MASTER-ADDR-BY-NAME", "locks")); got != Text([]any{"127.0.0.1", itoaPort(nodes[0])}) {
		t.Errorf("the sentinel names master %s; want %s", got, nodes[0].Addr())
	}
}

// itoaPort is the port of n, as a sentinel writes it.
func itoaPort(n *Node) string { return strconv.Itoa(n.port) }

// TestDoAuthenticates: Do on a node started WithPassword runs its command
// as an authenticated client, where a client without the password is
// refused.
func TestDoAuthenticates(t *testing.T) {
	n := Start(t, 1, WithPassword("pw-1234")).Nodes[0]
	n.MustDo("SET", "k", "v")
	if got := Text(n.MustDo("GET", "k")); got != "v" {
		t.Errorf("GET k = %q, want v", got)
	}
	if _, err := (&Node{t: t, port: n.port}).Do("GET", "k"); err == nil || !strings.Contains(err.Error(), "NOAUTH") {
		t.Errorf("GET without the password: %v, want NOAUTH", err)
	}
}
