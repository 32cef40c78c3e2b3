package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestClientWarningsAreOneLineEach: the client's records reach stderr in
// the tool's voice, a line each, whatever their values hold; below
// warning level, or while the tool is quiet, nothing.
func TestClientWarningsAreOneLineEach(t *testing.T) {
	var b strings.Builder
	tl := &tool{stderr: &b}
	log := tl.logger().With("lock", "job")
	log.Warn("redlock: extension failed", "error", "first line\nsecond line", "n", 3)
	log.Warn("server down")
	log.Info("redlock: server recovered")
	tl.quiet.Store(true)
	log.Warn("redlock: while acquiring")
	assert.Equal(t, "redlock: extension failed lock=job error=\"first line\\nsecond line\" n=3\n"+
		"redlock: server down lock=job\n", b.String())
}

// TestEvenServerCountWarns: two servers tolerate no more failures than
// one; the run goes on, and says so once.
func TestEvenServerCountWarns(t *testing.T) {
	t.Parallel()
	_, environ := cluster(t, 2)
	r := run(t, environ, "run", "job", "--", "true")
	assert.Equal(t, exitOK, r.code, r.stderr)
	assert.Len(t, r.lines(), 1, r.stderr)
	assert.Contains(t, r.stderr, "redlock: an even number of key servers")
}
