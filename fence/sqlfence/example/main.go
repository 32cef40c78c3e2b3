//go:build unix

// Command example shows a fenced SQL write refusing a holder that was
// paused past its lease: the failure a lock alone cannot prevent.
//
//	cd fence/sqlfence && go run ./example
//
// It needs redis-server on PATH (apt-get install redis-server), and
// nothing else: it starts three throwaway Redis servers on free loopback
// ports as the lock servers, makes a SQLite database in a temporary
// directory (modernc.org/sqlite, no cgo), and runs two copies of itself as
// worker processes, A and B, that share them. It removes everything when
// it ends, in about three seconds.
//
//  1. A takes the lock on invoice-42 with fencing (redlock.WithFencing)
//     under Do, which keeps it alive, and writes through the guard.
//  2. A checks that it still holds the lock, and is stopped with SIGSTOP
//     right after: a GC pause, a frozen VM, a swapped-out process. Its
//     keep-alive stops with it, and its lease runs out.
//  3. B, waiting for the lock, gets it with a higher fence and writes.
//  4. A is continued (SIGCONT) and makes the write it had decided on. The
//     guard refuses it with sqlfence.ErrStale, and the invoice keeps B's
//     write.
//
// Without the guard, step 4 would overwrite B's write.
package main

import (
	"bufio"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	_ "modernc.org/sqlite"

	"github.com/goredlock/goredlock/fence/sqlfence"
	"github.com/goredlock/goredlock/keyserver"
	"github.com/goredlock/goredlock/keyserver/redis"
	"github.com/goredlock/goredlock/redlock"
)

const (
	lockName = "invoice-42"
	ttl      = time.Second // the lease A outlives while stopped
	// roleEnv makes a copy of this program a worker: "A" or "B".
	roleEnv = "SQLFENCE_EXAMPLE_WORKER"
	// ready is what worker A prints when it is about to write, to be
	// stopped there.
	ready = "READY"
)

func main() {
	if role := os.Getenv(roleEnv); role != "" {
		if err := worker(role, os.Stdin, os.Stdout); err != nil {
			fmt.Fprintf(os.Stderr, "worker %s: %v\n", role, err)
			os.Exit(1)
		}
		return
	}
	if err := run(os.Stdout); err != nil {
		log.Fatal(err)
	}
}

// run is the parent: it starts the lock servers, the database and the
// workers, stops and continues A, and checks the outcome.
func run(w io.Writer) error {
	start := time.Now()
	out := &syncWriter{w: w}
	say := func(format string, args ...any) {
		fmt.Fprintf(out, "%5.2fs  %s\n", time.Since(start).Seconds(), fmt.Sprintf(format, args...))
	}
	dir, err := os.MkdirTemp("", "sqlfence-example-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)

	urls, stop, err := startRedis(dir, 3)
	if err != nil {
		return err
	}
	defer stop()
	dbPath := filepath.Join(dir, "shop.db")
	db, err := openDB(dbPath)
	if err != nil {
		return err
	}
	defer db.Close()
	ctx := context.Background()
	if _, err := db.ExecContext(ctx, "CREATE TABLE invoices (id TEXT PRIMARY KEY, status TEXT NOT NULL, written_by TEXT NOT NULL, fence INTEGER NOT NULL)"); err != nil {
		return err
	}
	if _, err := db.ExecContext(ctx, "INSERT INTO invoices VALUES (?, 'open', '-', 0)", lockName); err != nil {
		return err
	}
	g, err := sqlfence.New(sqlfence.SQLite, "")
	if err != nil {
		return err
	}
	if err := g.CreateTable(ctx, db); err != nil {
		return err
	}
	say("3 Redis lock servers on %s; SQLite database %s", strings.Join(hosts(urls), ", "), dbPath)

	env := append(os.Environ(), "SQLFENCE_EXAMPLE_SERVERS="+strings.Join(urls, ","), "SQLFENCE_EXAMPLE_DB="+dbPath)
	a, err := startWorker("A", env, say)
	if err != nil {
		return err
	}
	defer a.kill()
	if err := a.waitFor(ready, 10*time.Second); err != nil {
		return err
	}
	if err := a.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		return err
	}
	say("parent: A stopped (SIGSTOP, pid %d) between its check and its write; its lease of %v runs out", a.cmd.Process.Pid, ttl)

	b, err := startWorker("B", env, say)
	if err != nil {
		return err
	}
	defer b.kill()
	if err := b.wait(15 * time.Second); err != nil {
		return fmt.Errorf("worker B: %w", err)
	}

	if err := a.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		return err
	}
	say("parent: A continued (SIGCONT)")
	fmt.Fprintln(a.stdin) // A may go on: it is past the point where it was stopped
	if err := a.wait(15 * time.Second); err != nil {
		return fmt.Errorf("worker A: %w", err)
	}

	var status, by string
	var fence int64
	if err := db.QueryRowContext(ctx, "SELECT status, written_by, fence FROM invoices WHERE id = ?", lockName).Scan(&status, &by, &fence); err != nil {
		return err
	}
	say("invoice-42 is %q, written by %s with fence %d", status, by, fence)
	if by != "B" {
		return fmt.Errorf("invoice-42 was last written by %s, want B: the stale write got through", by)
	}
	if !a.refused {
		return errors.New("worker A did not report its write refused")
	}
	return nil
}

// worker is one holder: it takes the lock, writes through the guard, and
// (A only) waits on stdin before its second write, for the parent to stop
// it there.
func worker(role string, in io.Reader, w io.Writer) error {
	var servers []keyserver.KeyServer
	for _, u := range strings.Split(os.Getenv("SQLFENCE_EXAMPLE_SERVERS"), ",") {
		s, err := redis.FromURL(u)
		if err != nil {
			return err
		}
		defer s.Close()
		servers = append(servers, s)
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil)) // A's lost lock is expected
	client, err := redlock.New(servers, redlock.WithFencing(), redlock.WithLogger(quiet),
		redlock.WithRetryCount(-1)) // wait for the lock until ctx ends
	if err != nil {
		return err
	}
	defer client.Close()
	db, err := openDB(os.Getenv("SQLFENCE_EXAMPLE_DB"))
	if err != nil {
		return err
	}
	defer db.Close()
	g, err := sqlfence.New(sqlfence.SQLite, "")
	if err != nil {
		return err
	}

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var stale error
	err = client.Do(ctx, lockName, ttl, func(ctx context.Context) error {
		lock, _ := redlock.LockFromContext(ctx) // always there in Do's fn
		fence := lock.Fence()
		fmt.Fprintf(w, "holds %s with fence %d\n", lockName, fence)
		write := func(status string) error {
			// Not ctx: a holder that has decided to write writes; only
			// the guard stands in its way.
			wctx := context.WithoutCancel(ctx)
			return g.Do(wctx, db, lockName, fence, func(tx *sql.Tx) error {
				_, err := tx.ExecContext(wctx, "UPDATE invoices SET status = ?, written_by = ?, fence = ? WHERE id = ?", status, role, int64(fence), lockName)
				return err
			})
		}
		if role == "A" {
			if err := write("draft by A"); err != nil {
				return err
			}
			fmt.Fprintf(w, "wrote %q through the guard\n", "draft by A")
			if ctx.Err() != nil {
				return context.Cause(ctx)
			}
			fmt.Fprintf(w, "still holds the lock; about to write %q\n", "paid by A")
			fmt.Fprintln(w, ready)
			if _, err := bufio.NewReader(in).ReadString('\n'); err != nil {
				return err
			}
			fmt.Fprintf(w, "woke up; its lock's context says %q: too late, it checked before the pause\n", errText(context.Cause(ctx)))
			err := write("paid by A")
			if errors.Is(err, sqlfence.ErrStale) {
				stale = err
				fmt.Fprintf(w, "write refused: %v\n", err)
				return nil
			}
			if err != nil {
				return err
			}
			fmt.Fprintf(w, "wrote %q: the stale write got through!\n", "paid by A")
			return nil
		}
		if err := write("paid by B"); err != nil {
			return err
		}
		fmt.Fprintf(w, "wrote %q through the guard, released\n", "paid by B")
		return nil
	})
	if stale != nil {
		fmt.Fprintln(w, "REFUSED")
		return nil // Do's ErrLockLost is the expected end of A
	}
	return err
}

func errText(err error) string {
	if err == nil {
		return "held"
	}
	return err.Error()
}

// openDB opens the SQLite database at path, shared by three processes:
// WAL, and up to 10s of waiting for the write lock.
func openDB(path string) (*sql.DB, error) {
	return sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)")
}

// proc is a worker process whose output the parent relays.
type proc struct {
	name    string
	cmd     *exec.Cmd
	stdin   io.WriteCloser
	lines   chan string   // the worker's protocol lines (READY)
	done    chan struct{} // closed when stdout ends
	refused bool          // the worker printed REFUSED; read after done
}

func startWorker(name string, env []string, say func(string, ...any)) (*proc, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(exe)
	cmd.Env = append(env, roleEnv+"="+name)
	cmd.Stderr = os.Stderr
	cmd.SysProcAttr = sysProcAttr()
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &proc{name: name, cmd: cmd, stdin: stdin, lines: make(chan string, 8), done: make(chan struct{})}
	say("parent: started worker %s (pid %d)", name, cmd.Process.Pid)
	go func() {
		defer close(p.done)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			switch line := sc.Text(); line {
			case ready:
				p.lines <- line
			case "REFUSED":
				p.refused = true
			default:
				say("%s: %s", name, line)
			}
		}
	}()
	return p, nil
}

// waitFor waits for the worker to print line.
func (p *proc) waitFor(line string, d time.Duration) error {
	select {
	case l := <-p.lines:
		if l == line {
			return nil
		}
		return fmt.Errorf("worker %s printed %q, want %q", p.name, l, line)
	case <-p.done:
		return fmt.Errorf("worker %s ended before printing %q", p.name, line)
	case <-time.After(d):
		return fmt.Errorf("worker %s did not print %q within %v", p.name, line, d)
	}
}

// wait waits for the worker to exit.
func (p *proc) wait(d time.Duration) error {
	select {
	case <-p.done:
	case <-time.After(d):
		p.kill()
		return fmt.Errorf("did not end within %v", d)
	}
	return p.cmd.Wait()
}

// kill ends a worker that is still running; a no-op after wait.
func (p *proc) kill() {
	if p.cmd.ProcessState != nil {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGCONT)
	_ = p.cmd.Process.Kill()
	<-p.done
	_ = p.cmd.Wait()
}

// startRedis starts n redis-server processes on free loopback ports, with
// no persistence, their files in dir; stop kills them.
func startRedis(dir string, n int) (urls []string, stop func(), err error) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, nil, errors.New("redis-server not found on PATH; this example starts its own lock servers with it: apt-get install redis-server")
	}
	var cmds []*exec.Cmd
	stop = func() {
		for _, c := range cmds {
			_ = c.Process.Kill()
			_ = c.Wait()
		}
	}
	for i := 0; i < n; i++ {
		var c *exec.Cmd
		var port int
		for try := 0; ; try++ { // a free port can be taken before redis binds it
			port, err = freePort()
			if err != nil {
				stop()
				return nil, nil, err
			}
			d := filepath.Join(dir, "redis-"+strconv.Itoa(port))
			if err := os.Mkdir(d, 0o700); err != nil {
				stop()
				return nil, nil, err
			}
			c = exec.Command(bin, "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--dir", d,
				"--save", "", "--appendonly", "no", "--daemonize", "no", "--logfile", filepath.Join(d, "redis.log"))
			c.SysProcAttr = sysProcAttr()
			if err = c.Start(); err == nil {
				if err = ping(port, 5*time.Second); err == nil {
					break
				}
				_ = c.Process.Kill()
				_ = c.Wait()
			}
			if try == 4 {
				stop()
				return nil, nil, fmt.Errorf("starting redis-server: %w", err)
			}
		}
		cmds = append(cmds, c)
		urls = append(urls, fmt.Sprintf("redis://127.0.0.1:%d", port))
	}
	return urls, stop, nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// ping waits until a Redis answers PING on port.
func ping(port int, d time.Duration) error {
	deadline := time.Now().Add(d)
	for {
		c, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), time.Second)
		if err == nil {
			_ = c.SetDeadline(time.Now().Add(time.Second))
			_, err = c.Write([]byte("PING\r\n"))
			if err == nil {
				var line string
				line, err = bufio.NewReader(c).ReadString('\n')
				if err == nil && line != "+PONG\r\n" {
					err = fmt.Errorf("PING answered %q", line)
				}
			}
			c.Close()
			if err == nil {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return err
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func hosts(urls []string) []string {
	h := make([]string, len(urls))
	for i, u := range urls {
		h[i] = strings.TrimPrefix(u, "redis://")
	}
	return h
}

// syncWriter serialises the lines of the parent and of the workers' relays.
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}
