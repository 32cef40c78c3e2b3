package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	redigo "github.com/gomodule/redigo/redis"

	"github.com/goredlock/goredlock/internal/layout"
)

// node is one redis-server process this program started. Its files (the
// log only: persistence is off) live in a temporary directory removed by
// stop. The degraded states (states.go) pause it, or kill it and start it
// again on the same port, between cases.
type node struct {
	addr   string
	port   int
	bin    string
	dir    string
	cmd    *exec.Cmd
	exited chan struct{} // closed when the process has been waited for
	paused bool          // SIGSTOP sent, no SIGCONT yet
	dead   bool          // killed by kill, not started again yet
	hold   io.Closer     // while dead: the port, bound and not listening
}

// startNodes starts n independent redis-server masters on free loopback
// ports. On error it stops the ones already started.
func startNodes(ctx context.Context, bin string, n int) ([]*node, error) {
	var nodes []*node
	for i := 0; i < n; i++ {
		nd, err := startNode(ctx, bin)
		if err != nil {
			stopNodes(nodes)
			return nil, fmt.Errorf("starting redis node %d: %w", i, err)
		}
		nodes = append(nodes, nd)
	}
	return nodes, nil
}

func stopNodes(nodes []*node) {
	for _, nd := range nodes {
		nd.stop()
	}
}

// startNode tries a few free ports: another process can take a port
// between the moment it is found free and the moment redis binds it.
func startNode(ctx context.Context, bin string) (*node, error) {
	var err error
	for try := 0; try < 5; try++ {
		var port int
		if port, err = freePort(); err != nil {
			return nil, err
		}
		var nd *node
		if nd, err = launch(ctx, bin, port); err == nil {
			return nd, nil
		}
		if ctx.Err() != nil {
			return nil, err
		}
	}
	return nil, err
}

func launch(ctx context.Context, bin string, port int) (*node, error) {
	dir, err := os.MkdirTemp("", "goredlock-bench-redis-")
	if err != nil {
		return nil, err
	}
	nd := &node{addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), port: port, bin: bin, dir: dir, exited: make(chan struct{})}
	nd.cmd = exec.Command(bin,
		"--port", strconv.Itoa(port),
		"--bind", "127.0.0.1",
		"--dir", dir,
		"--logfile", filepath.Join(dir, "redis.log"),
		"--save", "",
		"--appendonly", "no",
		"--daemonize", "no",
		"--protected-mode", "no",
	)
	nd.cmd.Dir = dir
	nd.cmd.SysProcAttr = sysProcAttr()
	if err := nd.cmd.Start(); err != nil {
		os.RemoveAll(dir) //nolint:errcheck // best effort
		return nil, err
	}
	go func() {
		nd.cmd.Wait() //nolint:errcheck // killed by stop, or failed to bind: ready reports it
		close(nd.exited)
	}()
	if err := nd.ready(ctx, 10*time.Second); err != nil {
		log, _ := os.ReadFile(filepath.Join(dir, "redis.log"))
		nd.stop()
		return nil, fmt.Errorf("%w\n%s", err, log)
	}
	if err := nd.setHistory(time.Hour); err != nil {
		nd.stop()
		return nil, err
	}
	return nd, nil
}

// setHistory writes the node's goredlock marker as if the node had held
// its data for age, as a Redis that has served for a while would have
// (and as redistest and make redis-up do): a fresh process is otherwise
// quarantined (its grants not counted) for a TTL after goredlock's first
// read of it, and every goredlock case would start with its nodes refusing.
// The marker's age is what is gone of its TTL, layout.IncarnationTTL.
func (nd *node) setHistory(age time.Duration) error {
	c, err := redigo.Dial("tcp", nd.addr, redigo.DialConnectTimeout(time.Second), redigo.DialReadTimeout(time.Second))
	if err != nil {
		return fmt.Errorf("setting the marker on %s: %w", nd.addr, err)
	}
	defer c.Close()
	id := fmt.Sprintf("bench-%d-%d", nd.port, time.Now().UnixNano())
	cmd, args := layout.MarkerAged(id, age)
	if _, err := c.Do(cmd, args...); err != nil {
		return fmt.Errorf("setting the marker on %s: %w", nd.addr, err)
	}
	return nil
}

// ready waits until the node answers PING.
func (nd *node) ready(ctx context.Context, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		c, err := redigo.Dial("tcp", nd.addr, redigo.DialConnectTimeout(time.Second), redigo.DialReadTimeout(time.Second))
		if err == nil {
			_, err = c.Do("PING")
			c.Close()
			if err == nil {
				return nil
			}
		}
		select {
		case <-nd.exited:
			return fmt.Errorf("redis-server on %s exited", nd.addr)
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return errors.New("redis-server on " + nd.addr + " not ready after " + timeout.String())
		}
	}
}

// stop kills the process (SIGKILL ends a stopped process too), waits for
// it and removes its directory; it lets a dead node's port go.
func (nd *node) stop() {
	nd.cmd.Process.Kill() //nolint:errcheck // it may have exited already
	<-nd.exited
	os.RemoveAll(nd.dir) //nolint:errcheck // best effort: a temporary directory
	if nd.hold != nil {
		nd.hold.Close() //nolint:errcheck // best effort
		nd.hold = nil
	}
}

// pause makes the node silent: SIGSTOP. The kernel still completes TCP
// handshakes on its listening socket (up to the backlog) and takes in
// what clients send, but nothing is answered until resume.
func (nd *node) pause() error {
	if nd.paused || nd.dead {
		return nil
	}
	if err := pauseProcess(nd.cmd.Process); err != nil {
		return fmt.Errorf("pausing redis-server on %s: %w", nd.addr, err)
	}
	nd.paused = true
	return nil
}

// resume sends SIGCONT to a paused node; ready tells when it answers.
func (nd *node) resume() error {
	if !nd.paused {
		return nil
	}
	if err := resumeProcess(nd.cmd.Process); err != nil {
		return fmt.Errorf("resuming redis-server on %s: %w", nd.addr, err)
	}
	nd.paused = false
	return nil
}

// kill makes the node dead: the process is killed and its port is bound
// by this program without listening, so that connections to it are
// refused (RST) and the kernel does not hand the port to an outgoing
// connection as its local port (a client dialling a free port in the
// ephemeral range can otherwise connect to itself). Its keys are lost:
// persistence is off.
func (nd *node) kill() {
	if nd.dead {
		return
	}
	nd.stop()
	nd.paused, nd.dead = false, true
	// Without the hold (holdPort failed) the port is free and refuses
	// connections all the same.
	if hold, err := holdPort(nd.port); err == nil {
		nd.hold = hold
	}
}

// revive starts a dead node again on its port, and waits until it answers.
func (nd *node) revive(ctx context.Context) error {
	if !nd.dead {
		return nil
	}
	if nd.hold != nil {
		nd.hold.Close() //nolint:errcheck // best effort
		nd.hold = nil
	}
	var err error
	for try := 0; try < 5; try++ {
		var fresh *node
		if fresh, err = launch(ctx, nd.bin, nd.port); err == nil {
			nd.dir, nd.cmd, nd.exited, nd.dead = fresh.dir, fresh.cmd, fresh.exited, false
			return nil
		}
		if ctx.Err() != nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("restarting redis-server on %s: %w", nd.addr, err)
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("finding a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
