//go:build unix

package main

import (
	"bytes"
	"os"
	"os/exec"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

// TestMain runs this test binary as a worker when the example starts it as
// one (run re-executes os.Executable()).
func TestMain(m *testing.M) {
	if role := os.Getenv(roleEnv); role != "" {
		main()
		os.Exit(0)
	}
	goleak.VerifyTestMain(m)
}

// TestExample runs the example: worker A, stopped past its lease, has its
// write refused, and the invoice keeps B's. It needs redis-server: with
// CI set it fails without it, and skips otherwise.
func TestExample(t *testing.T) {
	if _, err := exec.LookPath("redis-server"); err != nil {
		const hint = "redis-server not found on PATH; install it with: apt-get install redis-server"
		if os.Getenv("CI") != "" {
			t.Fatal(hint)
		}
		t.Skip(hint)
	}
	var out bytes.Buffer
	err := run(&out)
	t.Logf("output:\n%s", out.String())
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"A: holds invoice-42 with fence 1",
		"B: holds invoice-42 with fence 2",
		`A: write refused: sqlfence: stale fence 1 for resource "invoice-42": fence 2 was already recorded`,
		`invoice-42 is "paid by B", written by B with fence 2`,
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the output lacks %q", want)
		}
	}
}
