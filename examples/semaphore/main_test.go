package main

import (
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestSemaphoreKeepsToItsPermits(t *testing.T) {
	var out strings.Builder
	if err := run(&out); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if strings.Count(out.String(), "encodes") != 6 || !strings.Contains(out.String(), "most permits held at once: 2") {
		t.Fatalf("unexpected output:\n%s", out.String())
	}
}
