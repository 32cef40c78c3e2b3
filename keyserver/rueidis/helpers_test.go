package rueidis_test

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/require"

	"github.com/goredlock/goredlock/internal/redistest"
	rueidisks "github.com/goredlock/goredlock/keyserver/rueidis"
)

var bg = context.Background()

// newClient returns a rueidis client for addr, closed when the test ends.
func newClient(t testing.TB, addr string, edit ...func(*rueidis.ClientOption)) rueidis.Client {
	t.Helper()
	opt := rueidis.ClientOption{InitAddress: []string{addr}}
	for _, e := range edit {
		e(&opt)
	}
	c, err := rueidis.NewClient(opt)
	require.NoError(t, err)
	t.Cleanup(c.Close)
	return c
}

// newServer returns a Server over c, closed when the test ends; cleanups
// run last in, first out, so before c is closed.
func newServer(t testing.TB, c rueidis.Client, opts ...rueidisks.Option) *rueidisks.Server {
	t.Helper()
	s := rueidisks.New(c, opts...)
	t.Cleanup(func() { s.Close() })
	return s
}

// do runs one command on addr directly, outside the key server, and
// returns its reply: nil, int64, string or []any.
func do(t testing.TB, addr string, cmd ...string) any {
	t.Helper()
	c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}, ForceSingleClient: true, DisableCache: true})
	require.NoError(t, err)
	defer c.Close()
	v, err := c.Do(bg, c.B().Arbitrary(cmd...).Build()).ToAny()
	if rueidis.IsRedisNil(err) {
		return nil
	}
	require.NoError(t, err, "%v", cmd)
	return v
}

// startRedis starts a redis-server that redistest cannot make (a cluster
// node, a sentinel) from extra configuration lines, in a temporary
// directory, waits for ready in its log and stops it when the test ends.
// It returns its address.
func startRedis(t *testing.T, ready string, extraArgs []string, conf ...string) string {
	t.Helper()
	bin := redistest.RequireServer(t)
	dir := t.TempDir()
	port := freePort(t)
	logFile := filepath.Join(dir, "redis.log")
	lines := append([]string{
		"port " + strconv.Itoa(port),
		"bind 127.0.0.1",
		"dir " + dir,
		"logfile " + logFile,
		"protected-mode no",
	}, conf...)
	confFile := filepath.Join(dir, "redis.conf")
	require.NoError(t, os.WriteFile(confFile, []byte(strings.Join(lines, "\n")+"\n"), 0o600))
	cmd := exec.Command(bin, append([]string{confFile}, extraArgs...)...)
	cmd.Dir = dir
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		cmd.Process.Kill() //nolint:errcheck // it may have exited already
		cmd.Wait()         //nolint:errcheck // killed: the exit status says so
	})
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if log, _ := os.ReadFile(logFile); bytes.Contains(log, []byte(ready)) {
			return net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		}
	}
	log, _ := os.ReadFile(logFile)
	t.Fatalf("redis-server %v not ready:\n%s", extraArgs, log)
	return ""
}

// startClusterNode starts a one-node Redis Cluster that serves every slot.
func startClusterNode(t *testing.T) string {
	t.Helper()
	addr := startRedis(t, "Ready to accept connections", nil,
		"cluster-enabled yes", "cluster-config-file nodes.conf", `save ""`, "appendonly no")
	do(t, addr, "CLUSTER", "ADDSLOTSRANGE", "0", "16383")
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if strings.Contains(fmt.Sprint(do(t, addr, "CLUSTER", "INFO")), "cluster_state:ok") {
			return addr
		}
	}
	t.Fatalf("cluster node %s never reached cluster_state:ok", addr)
	return ""
}

// startSentinel starts a sentinel that watches master under the name
// "locks", alone (quorum 1), and declares it down after downAfter.
func startSentinel(t *testing.T, master string, downAfter time.Duration) string {
	t.Helper()
	host, port, err := net.SplitHostPort(master)
	require.NoError(t, err)
	return startRedis(t, "+monitor master locks", []string{"--sentinel"},
		fmt.Sprintf("sentinel monitor locks %s %s 1", host, port),
		fmt.Sprintf("sentinel down-after-milliseconds locks %d", downAfter.Milliseconds()),
		"sentinel failover-timeout locks 5000")
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
