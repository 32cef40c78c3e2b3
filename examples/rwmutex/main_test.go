package main

import (
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestWriterHoldsAlone(t *testing.T) {
	var out strings.Builder
	if err := run(&out); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if strings.Count(out.String(), "reads (") != 8 || !strings.Contains(out.String(), "writer rebuilds the catalogue alone") {
		t.Fatalf("unexpected output:\n%s", out.String())
	}
}
