package sqlfence_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql"
)

// The MySQL dialect's tests run on one throwaway MariaDB server the
// package's tests share, as the PostgreSQL ones do: mariadbd from the
// Debian package (mariadb-server-core), started by the first test that
// needs it on an empty data directory in a temporary directory, listening
// on a Unix socket there only, without grant tables (no authentication),
// and stopped by TestMain. As root it runs as the postgres user (or
// nobody). Without mariadbd a test fails when CI is set, and skips
// otherwise. Oracle's MySQL server is not tested.

var myServer struct {
	once sync.Once
	err  error
	skip string
	dir  string
	cmd  *exec.Cmd
}

var myExited chan struct{}

func mariadbd() (string, error) {
	if p, err := exec.LookPath("mariadbd"); err == nil {
		return p, nil
	}
	for _, p := range []string{"/usr/sbin/mariadbd", "/usr/local/sbin/mariadbd"} {
		if isFile(p) {
			return p, nil
		}
	}
	return "", errors.New("mariadbd not found on PATH or in /usr/sbin; install it with: apt-get install mariadb-server-core")
}

func startMariaDB() {
	bin, err := mariadbd()
	if err != nil {
		myServer.skip = err.Error()
		return
	}
	cred, err := serverCredential()
	if err != nil {
		myServer.err = err
		return
	}
	dir, err := os.MkdirTemp("", "sqlfence-mariadb-")
	if err != nil {
		myServer.err = err
		return
	}
	myServer.dir = dir
	data := filepath.Join(dir, "data")
	if err := os.Mkdir(data, 0o700); err != nil {
		myServer.err = err
		return
	}
	if cred != nil {
		for _, d := range []string{dir, data} {
			if err := os.Chown(d, int(cred.Uid), int(cred.Gid)); err != nil {
				myServer.err = err
				return
			}
		}
	}
	logFile := filepath.Join(dir, "mariadb.log")
	cmd := exec.Command(bin, "--no-defaults", "--datadir="+data, "--socket="+mySocket(),
		"--skip-networking", "--skip-grant-tables", "--log-error="+logFile,
		"--pid-file="+filepath.Join(dir, "mariadb.pid"), "--tmpdir="+dir,
		"--innodb-buffer-pool-size=32M", "--innodb-log-file-size=16M",
		"--innodb-flush-log-at-trx-commit=0", "--innodb-doublewrite=0")
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		myServer.err = fmt.Errorf("mariadbd: %v", err)
		return
	}
	myServer.cmd = cmd
	exited := make(chan struct{})
	myExited = exited
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	db, err := sql.Open("mysql", myDSN(""))
	if err != nil {
		myServer.err = err
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
			myServer.err = fmt.Errorf("mariadbd exited at start:\n%s", out)
			myServer.cmd = nil
			return
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			out, _ := os.ReadFile(logFile)
			myServer.err = fmt.Errorf("mariadbd not ready after 30s: %v\n%s", err, out)
			return
		}
	}
}

func stopMariaDB() {
	if myServer.cmd != nil {
		_ = myServer.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-myExited:
		case <-time.After(10 * time.Second):
			_ = myServer.cmd.Process.Kill()
			<-myExited
		}
	}
	if myServer.dir != "" {
		_ = os.RemoveAll(myServer.dir)
	}
}

func mySocket() string { return filepath.Join(myServer.dir, "mariadb.sock") }

func myDSN(db string) string { return "root@unix(" + mySocket() + ")/" + db }

var myDatabases struct {
	mu sync.Mutex
	n  int
}

// mariaDB returns a connection pool to a fresh database of the shared
// server, dropped when the test ends.
func mariaDB(t *testing.T) *sql.DB {
	t.Helper()
	myServer.once.Do(startMariaDB)
	if myServer.skip != "" {
		if os.Getenv("CI") != "" {
			t.Fatal(myServer.skip)
		}
		t.Skip(myServer.skip)
	}
	if myServer.err != nil {
		t.Fatalf("starting MariaDB: %v", myServer.err)
	}
	myDatabases.mu.Lock()
	myDatabases.n++
	name := fmt.Sprintf("t%d_%s", myDatabases.n, strings.ToLower(sanitize(t.Name())))
	if len(name) > 60 {
		name = name[:60]
	}
	myDatabases.mu.Unlock()
	admin, err := sql.Open("mysql", myDSN(""))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	if _, err := admin.Exec("CREATE DATABASE " + name); err != nil {
		t.Fatalf("CREATE DATABASE %s: %v", name, err)
	}
	db, err := sql.Open("mysql", myDSN(name))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		db.Close()
		admin, err := sql.Open("mysql", myDSN(""))
		if err != nil {
			return
		}
		defer admin.Close()
		_, _ = admin.Exec("DROP DATABASE IF EXISTS " + name)
	})
	return db
}
