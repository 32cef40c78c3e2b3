package sqlfence_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	_ "github.com/lib/pq"
)

// The PostgreSQL tests run on one throwaway server the package's tests
// share: started by the first test that needs it, from the binaries of
// the Debian package (postgresql; /usr/lib/postgresql/N/bin), in a
// temporary directory, listening on a Unix socket there only, with fsync
// off; stopped by TestMain. PostgreSQL refuses to run as root, so as root
// the server runs as the postgres user (or nobody) and its directory is
// theirs. Without the binaries a test fails when CI is set, and skips
// otherwise.

// pgServer is the shared server.
var pgServer struct {
	once sync.Once
	err  error  // why it did not start
	skip string // why it cannot start here (no binaries)
	dir  string // its temporary directory (socket and data)
	cmd  *exec.Cmd
	log  string
}

const pgPort = 5432 // the socket's name only: it listens on no TCP port

// pgBinDir returns the directory of initdb and postgres: the newest
// /usr/lib/postgresql/N/bin, else that of initdb on PATH.
func pgBinDir() (string, error) {
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return pgMajor(dirs[i]) > pgMajor(dirs[j]) })
	for _, d := range dirs {
		if isFile(filepath.Join(d, "initdb")) && isFile(filepath.Join(d, "postgres")) {
			return d, nil
		}
	}
	if p, err := exec.LookPath("initdb"); err == nil {
		if real, err := filepath.EvalSymlinks(p); err == nil {
			p = real
		}
		d := filepath.Dir(p)
		if isFile(filepath.Join(d, "postgres")) {
			return d, nil
		}
	}
	return "", errors.New("PostgreSQL server binaries (initdb, postgres) not found under /usr/lib/postgresql/*/bin or on PATH; install them with: apt-get install postgresql")
}

func pgMajor(binDir string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(binDir)))
	return n
}

func isFile(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && !fi.IsDir()
}

// serverCredential returns who runs a database server: nil (this process's user)
// unless this process is root.
func serverCredential() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	for _, name := range []string{"postgres", "nobody"} {
		u, err := user.Lookup(name)
		if err != nil {
			continue
		}
		uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
		gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
		if err1 != nil || err2 != nil || uid == 0 {
			continue
		}
		return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
	}
	return nil, errors.New("running as root, and neither a postgres nor a nobody user exists to run PostgreSQL as")
}

// startPostgres starts the shared server; it leaves pgServer.err or
// pgServer.skip set when it cannot.
func startPostgres() {
	bin, err := pgBinDir()
	if err != nil {
		pgServer.skip = err.Error()
		return
	}
	cred, err := serverCredential()
	if err != nil {
		pgServer.err = err
		return
	}
	// Not t.TempDir: its parent is private to this user, and the server
	// may run as another.
	dir, err := os.MkdirTemp("", "sqlfence-pg-")
	if err != nil {
		pgServer.err = err
		return
	}
	pgServer.dir = dir
	if cred != nil {
		if err := os.Chown(dir, int(cred.Uid), int(cred.Gid)); err != nil {
			pgServer.err = err
			return
		}
	}
	data := filepath.Join(dir, "data")
	initdb := exec.Command(filepath.Join(bin, "initdb"), "-D", data, "-U", "postgres",
		"--auth=trust", "--encoding=UTF8", "--locale=C", "--no-sync")
	initdb.Dir = dir
	initdb.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Pdeathsig: syscall.SIGKILL}
	if out, err := initdb.CombinedOutput(); err != nil {
		pgServer.err = fmt.Errorf("initdb: %v\n%s", err, out)
		return
	}
	logFile := filepath.Join(dir, "postgres.log")
	pgServer.log = logFile
	lf, err := os.Create(logFile)
	if err != nil {
		pgServer.err = err
		return
	}
	defer lf.Close()
	cmd := exec.Command(filepath.Join(bin, "postgres"), "-D", data,
		"-k", dir, "-p", strconv.Itoa(pgPort), "-c", "listen_addresses=",
		"-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off",
		"-c", "max_connections=100")
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = lf, lf
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		pgServer.err = fmt.Errorf("postgres: %v", err)
		return
	}
	pgServer.cmd = cmd
	exited := make(chan struct{})
	go func() { // reaps it if it dies at start; stopPostgres waits otherwise
		_ = cmd.Wait()
		close(exited)
	}()
	pgExited = exited
	db, err := sql.Open("postgres", pgDSN())
	if err != nil {
		pgServer.err = err
		return
	}
	defer db.Close()
	deadline := time.Now().Add(30 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err = db.PingContext(ctx)
		cancel()
		if err == nil {
			return
		}
		select {
		case <-exited:
			out, _ := os.ReadFile(logFile)
			pgServer.err = fmt.Errorf("postgres exited at start:\n%s", out)
			pgServer.cmd = nil
			return
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			out, _ := os.ReadFile(logFile)
			pgServer.err = fmt.Errorf("postgres not ready after 30s: %v\n%s", err, out)
			return
		}
	}
}

// pgExited closes when the server process has been reaped.
var pgExited chan struct{}

// stopPostgres stops the shared server (fast shutdown, then SIGKILL) and
// removes its directory.
func stopPostgres() {
	if pgServer.cmd != nil {
		_ = pgServer.cmd.Process.Signal(syscall.SIGINT) // fast shutdown
		select {
		case <-pgExited:
		case <-time.After(10 * time.Second):
			_ = pgServer.cmd.Process.Kill()
			<-pgExited
		}
	}
	if pgServer.dir != "" {
		_ = os.RemoveAll(pgServer.dir)
	}
}

func pgDSN() string {
	return fmt.Sprintf("host=%s port=%d user=postgres dbname=postgres sslmode=disable", pgServer.dir, pgPort)
}

var pgDatabases struct {
	mu sync.Mutex
	n  int
}

// postgresDB returns a connection pool to a fresh database of the shared
// server, dropped when the test ends; it fails the test when CI is set and
// the server cannot start, and skips it otherwise.
func postgresDB(t *testing.T) *sql.DB {
	t.Helper()
	pgServer.once.Do(startPostgres)
	if pgServer.skip != "" {
		if os.Getenv("CI") != "" {
			t.Fatal(pgServer.skip)
		}
		t.Skip(pgServer.skip)
	}
	if pgServer.err != nil {
		t.Fatalf("starting PostgreSQL: %v", pgServer.err)
	}
	pgDatabases.mu.Lock()
	pgDatabases.n++
	name := fmt.Sprintf("t%d_%s", pgDatabases.n, strings.ToLower(sanitize(t.Name())))
	if len(name) > 60 {
		name = name[:60]
	}
	pgDatabases.mu.Unlock()
	admin, err := sql.Open("postgres", pgDSN())
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	if _, err := admin.Exec("CREATE DATABASE " + name); err != nil {
		t.Fatalf("CREATE DATABASE %s: %v", name, err)
	}
	db, err := sql.Open("postgres", strings.Replace(pgDSN(), "dbname=postgres", "dbname="+name, 1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		db.Close()
		admin, err := sql.Open("postgres", pgDSN())
		if err != nil {
			return
		}
		defer admin.Close()
		_, _ = admin.Exec("DROP DATABASE IF EXISTS " + name)
	})
	return db
}

func sanitize(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			return r
		}
		return '_'
	}, s)
}
