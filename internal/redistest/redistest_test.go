package redistest

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	redigo "github.com/gomodule/redigo/redis"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// recorder is a testing.TB that records how a helper ended the test.
type recorder struct {
	testing.TB
	ended string // "fatal" or "skip"
	msg   string
}

type stop struct{}

func (r *recorder) Helper() {}
func (r *recorder) Fatal(args ...any) {
	r.ended, r.msg = "fatal", toString(args)
	panic(stop{})
}
func (r *recorder) Skip(args ...any) {
	r.ended, r.msg = "skip", toString(args)
	panic(stop{})
}

func toString(args []any) string {
	var b strings.Builder
	for _, a := range args {
		b.WriteString(a.(string))
	}
	return b.String()
}

func requireWith(t *testing.T, ci string) *recorder {
	t.Setenv("PATH", t.TempDir()) // no redis-server here
	t.Setenv(ServerEnv, "")
	return require(t, ci)
}

func require(t *testing.T, ci string) *recorder {
	t.Setenv("CI", ci)
	r := &recorder{TB: t}
	func() {
		defer func() {
			if p := recover(); p != nil && p != (stop{}) {
				panic(p)
			}
		}()
		RequireServer(r)
	}()
	return r
}

func TestMissingServerFailsUnderCI(t *testing.T) {
	r := requireWith(t, "true")
	if r.ended != "fatal" || !strings.Contains(r.msg, "apt-get install redis-server") {
		t.Fatalf("with CI set: ended %q with %q, want a failure with the install hint", r.ended, r.msg)
	}
}

func TestMissingServerSkipsOutsideCI(t *testing.T) {
	r := requireWith(t, "")
	if r.ended != "skip" || !strings.Contains(r.msg, "apt-get install redis-server") {
		t.Fatalf("without CI: ended %q with %q, want a skip with the install hint", r.ended, r.msg)
	}
}

func TestServerEnvMissingFailsUnderCI(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "valkey-server")
	t.Setenv(ServerEnv, missing)
	r := require(t, "true")
	if r.ended != "fatal" || !strings.Contains(r.msg, ServerEnv+"="+missing) {
		t.Fatalf("with CI set and %s naming no file: ended %q with %q, want a failure naming it", ServerEnv, r.ended, r.msg)
	}
	r = require(t, "")
	if r.ended != "skip" || !strings.Contains(r.msg, ServerEnv+"="+missing) {
		t.Fatalf("without CI and %s naming no file: ended %q with %q, want a skip naming it", ServerEnv, r.ended, r.msg)
	}
}

func TestServerEnvSelectsTheBinary(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "some-server")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", t.TempDir()) // no redis-server here
	t.Setenv(ServerEnv, bin)
	t.Setenv("CI", "true")
	if got := RequireServer(t); got != bin {
		t.Fatalf("RequireServer with %s=%s = %q", ServerEnv, bin, got)
	}
}

func ping(t *testing.T, n *Node) error {
	t.Helper()
	conn, err := redigo.Dial("tcp", n.Addr(), redigo.DialConnectTimeout(time.Second), redigo.DialReadTimeout(time.Second))
	if err != nil {
		return err
	}
	defer conn.Close()
	_, err = conn.Do("PING")
	return err
}

func TestNodeLifecycle(t *testing.T) {
	c := Start(t, 2)
	n := c.Nodes[0]
	if err := ping(t, n); err != nil {
		t.Fatalf("fresh node: %v", err)
	}
	conn, err := redigo.Dial("tcp", n.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.Do("SET", "k", "v"); err != nil {
		t.Fatal(err)
	}

	n.Pause()
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	_, err = redigo.DoContext(conn, ctx, "GET", "k")
	cancel()
	if err == nil {
		t.Fatal("a paused node answered")
	}
	n.Resume()

	n.Restart()
	conn2, err := redigo.Dial("tcp", n.Addr())
	if err != nil {
		t.Fatalf("after restart: %v", err)
	}
	defer conn2.Close()
	if v, err := conn2.Do("GET", "k"); err != nil || v != nil {
		t.Fatalf("after restart GET k = %v, %v; want an empty node", v, err)
	}

	n.Kill()
	if err := ping(t, n); err == nil {
		t.Fatal("a killed node answered")
	}
	if err := ping(t, c.Nodes[1]); err != nil {
		t.Fatalf("the other node died too: %v", err)
	}
	for _, node := range c.Nodes {
		for _, f := range []string{"dump.rdb", "appendonly.aof"} {
			if _, err := os.Stat(filepath.Join(node.dir, f)); err == nil {
				t.Errorf("%s wrote %s", node.Addr(), f)
			}
		}
	}
}

// set and get run one command each on a fresh connection to n.
func set(t *testing.T, n *Node, key, value string) {
	t.Helper()
	conn, err := redigo.Dial("tcp", n.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.Do("SET", key, value); err != nil {
		t.Fatal(err)
	}
}

func get(t *testing.T, n *Node, key string) any {
	t.Helper()
	conn, err := redigo.Dial("tcp", n.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	v, err := conn.Do("GET", key)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestKillThenRevive(t *testing.T) {
	n := Start(t, 1).Nodes[0]
	set(t, n, "k", "v")
	n.Kill()
	if n.Running() {
		t.Fatal("a killed node says it is running")
	}
	if err := ping(t, n); err == nil {
		t.Fatal("a killed node answered")
	}
	n.Revive()
	if !n.Running() {
		t.Fatal("a revived node says it is not running")
	}
	if v := get(t, n, "k"); v != nil {
		t.Fatalf("GET k after kill and revive without persistence = %q, want nil", v)
	}
}

func TestRestartAfterWaits(t *testing.T) {
	n := Start(t, 1).Nodes[0]
	set(t, n, "k", "v")
	start := time.Now()
	n.RestartAfter(150 * time.Millisecond)
	if d := time.Since(start); d < 150*time.Millisecond {
		t.Fatalf("RestartAfter(150ms) returned after %v", d)
	}
	if err := ping(t, n); err != nil {
		t.Fatalf("after RestartAfter: %v", err)
	}
	if v := get(t, n, "k"); v != nil {
		t.Fatalf("GET k = %q, want an empty node", v)
	}
}

// With appendfsync always, a write acknowledged before SIGKILL is there
// after the restart, with its expiry.
func TestAppendFsyncAlwaysSurvivesKill(t *testing.T) {
	n := Start(t, 1, WithAppendFsyncAlways()).Nodes[0]
	set(t, n, "k", "v")
	conn, err := redigo.Dial("tcp", n.Addr())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Do("SET", "ttl", "v", "PX", 60000); err != nil {
		t.Fatal(err)
	}
	conn.Close()

	n.Restart()
	if v, _ := redigo.String(get(t, n, "k"), nil); v != "v" {
		t.Fatalf("GET k after restart = %q, want %q", v, "v")
	}
	conn, err = redigo.Dial("tcp", n.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	pttl, err := redigo.Int64(conn.Do("PTTL", "ttl"))
	if err != nil || pttl <= 0 || pttl > 60000 {
		t.Fatalf("PTTL of a key set with PX 60000 after restart = %d, %v; want it kept", pttl, err)
	}

	n.Kill()
	n.Revive()
	if v, _ := redigo.String(get(t, n, "k"), nil); v != "v" {
		t.Fatalf("GET k after kill and revive = %q, want %q", v, "v")
	}
	if _, err := os.Stat(filepath.Join(n.dir, "appendonlydir")); err != nil {
		t.Fatalf("no append-only file in the node's own directory: %v", err)
	}
}
