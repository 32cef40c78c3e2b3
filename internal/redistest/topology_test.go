package redistest

import (
	"testing"
	"time"
)

func TestClusterAndSentinel(t *testing.T) {
	c := Start(t, 1, WithClusterMode())
	if _, err := c.Nodes[0].Do("SET", "a", "b"); err != nil {
		t.Fatal(err)
	}
	nodes := Start(t, 2).Nodes
	nodes[1].ReplicaOf(nodes[0])
	s := StartSentinel(t, nodes[0], "locks", 300*time.Millisecond, nodes[1])
	t.Log(s.MustDo("SENTINEL", "GET-MASTER-ADDR-BY-NAME", "locks"))
}
