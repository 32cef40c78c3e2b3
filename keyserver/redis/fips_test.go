package redis_test

import (
	"context"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/goredlock/goredlock/internal/redistest"
	"github.com/goredlock/goredlock/keyserver/redis"
)

// fipsAddr is the environment variable through which TestFIPSOnly tells
// the copy of this test binary it runs which Redis to lock on.
const fipsAddr = "GOREDLOCK_FIPS_REDIS"

// TestFIPSOnly runs a lock's whole life, the waiting line included, in a
// copy of this test binary that allows only FIPS 140 approved algorithms
// (GODEBUG=fips140=only), where computing a SHA-1 panics: the Server must
// take its script digests from Redis, never compute them.
func TestFIPSOnly(t *testing.T) {
	if addr := os.Getenv(fipsAddr); addr != "" {
		lockUnderFIPS(t, addr)
		return
	}
	node := redistest.Start(t, 1).Nodes[0]
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestFIPSOnly$", "-test.count=1")
	cmd.Env = append(os.Environ(), "GODEBUG=fips140=only", fipsAddr+"="+node.Addr())
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the lock under GODEBUG=fips140=only failed: %v\n%s", err, out)
	}
	if got := redistest.Text(node.MustDo("INFO", "commandstats")); !containsAll(got, "cmdstat_evalsha", "cmdstat_script|load") {
		t.Errorf("the child ran no script by digest:\n%s", got)
	}
}

// lockUnderFIPS is the child's side of TestFIPSOnly.
func lockUnderFIPS(t *testing.T, addr string) {
	for _, opts := range [][]redis.Option{nil, {redis.WithPooledConnections()}} {
		s, err := redis.FromURL("redis://"+addr, opts...)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		const holder, waiter = "0000019a2b3c4d01.00000001000000000000000000000001", "0000019a2b3c4d02.00000002000000000000000000000001"
		steps := []func() error{
			func() error { _, err := s.Acquire(ctx, "fips", holder, time.Minute); return err },
			func() error { _, err := s.Extend(ctx, "fips", holder, time.Minute); return err },
			func() error { _, _, err := s.AcquireInLine(ctx, "fips", waiter, time.Minute, ""); return err },
			func() error {
				turn, stop, err := s.WatchTurn(ctx, "fips", waiter)
				if err != nil {
					return err
				}
				defer stop()
				if _, err := s.Release(ctx, "fips", holder); err != nil {
					return err
				}
				select {
				case <-turn:
					return nil
				case <-ctx.Done():
					return ctx.Err()
				}
			},
			func() error { _, _, err := s.AcquireInLine(ctx, "fips", waiter, time.Minute, ""); return err },
			func() error { _, _, err := s.AcquireFenced(ctx, "fips", waiter, time.Minute); return err },
			func() error { _, err := s.Release(ctx, "fips", waiter); return err },
		}
		for i, step := range steps {
			if err := step(); err != nil {
				t.Errorf("step %d: %v", i, err)
			}
		}
		cancel()
		s.Close()
	}
}

func containsAll(s string, subs ...string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}

// TestNoPackageImportsSHA1: no package of the module, its tests included,
// imports crypto/sha1. (The standard library's crypto/tls and crypto/x509,
// which rediss:// needs, import it for the TLS versions and certificates
// that still use SHA-1, and so does redigo for its own script helper, which
// the Server does not use; so `go list -deps` lists it whatever this module
// does. What this module can promise is that nothing of its own computes a
// SHA-1, which TestFIPSOnly proves at run time and this test at the source.)
func TestNoPackageImportsSHA1(t *testing.T) {
	root := "../.."
	fset := token.NewFileSet()
	seen := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) && path != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		seen++
		for _, imp := range f.Imports {
			if imp.Path.Value == `"crypto/sha1"` {
				t.Errorf("%s imports crypto/sha1", path)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if seen < 100 {
		t.Fatalf("read %d Go files under %s; the walk missed the module", seen, root)
	}
}
