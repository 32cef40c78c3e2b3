package main

import (
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestEveryReplicaLeadsOnce: the observer sees each replica lead, one
// after the other.
func TestEveryReplicaLeadsOnce(t *testing.T) {
	var out strings.Builder
	if err := run(&out); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	for _, r := range []string{"10.0.0.1:8080", "10.0.0.2:8080", "10.0.0.3:8080"} {
		if strings.Count(out.String(), "observer: leader is "+r) != 1 {
			t.Fatalf("replica %s was not seen leading once:\n%s", r, out.String())
		}
	}
}
