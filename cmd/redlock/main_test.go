package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"go.uber.org/goleak"
)

// bin is the redlock binary under test, built once for the package: the
// tests run it as users do, against real redis-server processes.
var bin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "redlock-cmd-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := 1
	bin = filepath.Join(dir, "redlock")
	if err := build(bin); err != nil {
		fmt.Fprintln(os.Stderr, "building redlock:", err)
	} else {
		code = m.Run()
		if code == 0 {
			if err := goleak.Find(); err != nil {
				fmt.Fprintln(os.Stderr, "goleak:", err)
				code = 1
			}
		}
	}
	os.RemoveAll(dir)
	os.Exit(code)
}

// build compiles the command into out, with the race detector when the
// tests run with it, so that a race in the tool fails the run too.
func build(out string) error {
	gobin := "go"
	if root := os.Getenv("GOROOT"); root != "" {
		gobin = filepath.Join(root, "bin", "go")
	}
	args := []string{"build", "-o", out}
	if raceEnabled {
		args = append(args, "-race")
	}
	cmd := exec.Command(gobin, append(args, ".")...)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	return cmd.Run()
}
