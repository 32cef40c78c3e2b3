package main

import (
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestQuickstartNeverOverlaps(t *testing.T) {
	var out strings.Builder
	if err := run(&out); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "overlapping holders: 0") || strings.Count(out.String(), "HOLDS") != 12 {
		t.Fatalf("unexpected output:\n%s", out.String())
	}
}
