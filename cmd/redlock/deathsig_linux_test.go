package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestKilledRedlockStopsCommand: when redlock dies without a chance to
// pass anything on (SIGKILL), the kernel sends COMMAND SIGTERM, as nothing
// keeps the lock alive any more.
func TestKilledRedlockStopsCommand(t *testing.T) {
	t.Parallel()
	_, environ, dir := jobCluster(t)
	p := start(t, environ, append([]string{"run", "job", "--"},
		script(`trap 'echo term > "$D/got"; exit 0' TERM; `+waiting)...)...)
	waitFile(t, filepath.Join(dir, "started"), p)
	p.signal(t, os.Kill)
	assert.Equal(t, -1, p.wait(t).code, "killed")
	waitFile(t, filepath.Join(dir, "got"), nil)
}
