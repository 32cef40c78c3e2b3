package main

import (
	"strings"
	"testing"
	"time"

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
	tl.quiet.Store(false)
	log.Warn("redlock: lock lost: not extended in time", "until", 98765*time.Microsecond)
	log.Warn("redlock: key server failing", "op", "acquire", "server", 1, "error", "reported by the run")
	log.Warn("redlock: key server failing", "op", "extend", "server", 1, "error", "connection refused")
	tl.addrs = []string{"127.0.0.1:7601", "127.0.0.1:7602"}
	log.Warn("redlock: key server failing", "op", "extend", "server", 1, "error", "connection refused")
	log.Warn("redlock: quorum came too late", "validity", 1500*time.Microsecond, "loss_margin", time.Second)
	assert.Equal(t, "redlock: extension failed (lock \"job\", n 3): first line second line\n"+
		"redlock: server down (lock \"job\")\n"+
		"redlock: lock lost: not extended in time (lock \"job\", 99ms before it expires)\n"+
		"redlock: key server failing (lock \"job\", extend, server #2): connection refused\n"+
		"redlock: key server failing (lock \"job\", extend, server 127.0.0.1:7602): connection refused\n"+
		"redlock: quorum came too late (lock \"job\", validity 2ms, loss margin 1s)\n", b.String())
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
