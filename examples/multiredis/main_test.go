package main

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/goredlock/goredlock/internal/redistest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestSurvivesSilentMinority(t *testing.T) {
	cluster := redistest.Start(t, 5)
	// Stragglers may still log after run returns: read under the
	// writer's lock.
	var b strings.Builder
	out := &syncWriter{w: &b}
	if err := run(context.Background(), out, cluster.URLs(""), true); err != nil {
		t.Fatalf("%v\n%s", err, read(out, &b))
	}
	for _, want := range []string{"acquire with a minority silent", "extend with a minority silent", "release with a minority silent"} {
		if !strings.Contains(read(out, &b), want) {
			t.Errorf("output lacks %q:\n%s", want, read(out, &b))
		}
	}
	if strings.Count(read(out, &b), " ok\n") != 5 {
		t.Errorf("not every step succeeded:\n%s", read(out, &b))
	}
	t.Log("\n" + read(out, &b))
}

func read(out *syncWriter, b *strings.Builder) string {
	out.mu.Lock()
	defer out.mu.Unlock()
	return b.String()
}

func TestServerURLs(t *testing.T) {
	local := func(ports ...string) []string {
		var urls []string
		for _, p := range ports {
			urls = append(urls, "redis://127.0.0.1:"+p)
		}
		return urls
	}
	for _, tc := range []struct {
		args  []string
		ports string
		want  []string
	}{
		{ports: "", want: local("7001", "7002", "7003", "7004", "7005")},
		{ports: "  ", want: local("7001", "7002", "7003", "7004", "7005")},
		{ports: "8001 8002 8003", want: local("8001", "8002", "8003")},
		{ports: "8001,8002, 8003\n", want: local("8001", "8002", "8003")},
		{args: []string{"redis://h1:6379", "redis://h2:6379"}, ports: "8001", want: []string{"redis://h1:6379", "redis://h2:6379"}},
	} {
		got, err := serverURLs(tc.args, tc.ports)
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("serverURLs(%q, %q) = %q, %v; want %q", tc.args, tc.ports, got, err, tc.want)
		}
	}
	for _, bad := range []string{"7001 x", "0", "70000", "7001;7002"} {
		if got, err := serverURLs(nil, bad); err == nil {
			t.Errorf("REDIS_PORTS=%q gave %q, want an error", bad, got)
		}
	}
}

// The README's flow: make redis-up on the ports in REDIS_PORTS, the example
// on the same ports, make redis-down.
func TestMakeRedisUpServesTheExample(t *testing.T) {
	needMake(t)
	dir := t.TempDir()
	var ports, out string
	var err error
	for try := 0; try < 3; try++ { // a free port can be taken before redis binds it
		ports = strings.Join(freePorts(t, 3), " ")
		started := ports
		t.Cleanup(func() { makeRedis(t, "redis-down", started, dir) })
		out, err = makeRedis(t, "redis-up", ports, dir)
		if err == nil || !strings.Contains(out, "Address already in use") {
			break
		}
		makeRedis(t, "redis-down", ports, dir)
	}
	if err != nil {
		t.Fatalf("make redis-up: %v\n%s", err, out)
	}
	for _, p := range strings.Fields(ports) {
		if !strings.Contains(out, "redis on 127.0.0.1:"+p+"\n") {
			t.Errorf("make redis-up did not report port %s:\n%s", p, out)
		}
	}
	urls, err := serverURLs(nil, ports)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	w := &syncWriter{w: &b}
	if err := run(context.Background(), w, urls, false); err != nil {
		t.Fatalf("%v\n%s", err, read(w, &b))
	}
	if got := read(w, &b); !strings.Contains(got, "3 servers, quorum 2") || strings.Count(got, " ok\n") != 2 {
		t.Errorf("the example did not take and release the lock:\n%s", got)
	}

	out, err = makeRedis(t, "redis-down", ports, dir)
	if err != nil {
		t.Fatalf("make redis-down: %v\n%s", err, out)
	}
	for _, p := range strings.Fields(ports) {
		if conn, err := net.Dial("tcp", "127.0.0.1:"+p); err == nil {
			conn.Close()
			t.Errorf("port %s still answers after make redis-down returned", p)
		}
	}
}

func TestMakeRedisUpFailsWhenAServerDoesNotStart(t *testing.T) {
	needMake(t)
	dir := t.TempDir()
	taken, err := net.Listen("tcp", "127.0.0.1:0") // not Redis: the daemon dies after forking
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	_, redisPort, err := net.SplitHostPort(redistest.Start(t, 1).Nodes[0].Addr()) // Redis, but not ours
	if err != nil {
		t.Fatal(err)
	}
	free := freePorts(t, 1)[0]
	for _, tc := range []struct{ port, want string }{
		{port: strconv.Itoa(taken.Addr().(*net.TCPAddr).Port), want: "did not start on 127.0.0.1:"},
		{port: redisPort, want: "a Redis already answers on 127.0.0.1:"},
	} {
		ports := free + " " + tc.port
		out, err := makeRedis(t, "redis-up", ports, dir)
		makeRedis(t, "redis-down", ports, dir)
		if err == nil {
			t.Errorf("make redis-up succeeded with port %s taken:\n%s", tc.port, out)
			continue
		}
		if !strings.Contains(out, tc.want+tc.port) {
			t.Errorf("make redis-up with port %s taken: want %q in:\n%s", tc.port, tc.want+tc.port, out)
		}
		if strings.Contains(out, "redis on 127.0.0.1:"+tc.port) {
			t.Errorf("make redis-up reported the taken port %s as started:\n%s", tc.port, out)
		}
		if _, err := os.Stat(filepath.Join(dir, tc.port, "redis.pid")); err == nil {
			t.Errorf("a pid file was left for port %s", tc.port)
		}
	}
}

// needMake fails the test under CI, and skips it elsewhere, when make,
// redis-server or redis-cli is missing: the same rule as redistest's.
func needMake(t *testing.T) {
	t.Helper()
	redistest.RequireServer(t)
	for _, tool := range []string{"make", "redis-cli"} {
		if _, err := exec.LookPath(tool); err != nil {
			msg := tool + " not found on PATH; install it with: apt-get install make redis-server"
			if os.Getenv("CI") != "" {
				t.Fatal(msg)
			}
			t.Skip(msg)
		}
	}
}

// makeRedis runs a redis-up or redis-down target of the repository's
// Makefile with REDIS_PORTS and REDIS_DIR in the environment.
func makeRedis(t *testing.T, target, ports, dir string) (string, error) {
	t.Helper()
	cmd := exec.Command("make", "-s", "-C", filepath.Join("..", ".."), target)
	cmd.Env = append(os.Environ(), "REDIS_PORTS="+ports, "REDIS_DIR="+dir)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// freePorts returns n loopback ports that were free a moment ago.
func freePorts(t *testing.T, n int) []string {
	t.Helper()
	var ports []string
	for i := 0; i < n; i++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		ports = append(ports, strconv.Itoa(l.Addr().(*net.TCPAddr).Port))
	}
	return ports
}
