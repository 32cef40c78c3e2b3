//go:build ignore

// modproxy is the release check's helper (.ci/release/check,
// .ci/release/set-version). It uses the standard library only and is built
// outside any module, so it is no package of the core module: `go vet ./...`
// and `go test ./...` never see it (the build tag, and the dot directory).
//
//	go run modproxy.go pin -version V [-dropreplace] GOMOD...
//
// sets every requirement of github.com/goredlock/goredlock and of its nested
// modules in each go.mod to V, through `go mod edit`; with -dropreplace it
// also drops the replace directives of those modules.
//
//	go run modproxy.go serve -dir PROXY -version V -time T -root SRC MODDIR...
//
// writes, for each module whose go.mod is SRC/MODDIR/go.mod, the files of a
// GOPROXY=file://PROXY module proxy: <escaped path>/@v/list, V.info, V.mod
// and V.zip. The zip holds the regular files under SRC/MODDIR, each named
// <module>@V/<path>, less every directory that has a go.mod of its own
// (another module), VCS directories and vendor directories, as
// golang.org/x/mod/zip leaves them out. The go command checks the rest
// of the zip rules (file names, case collisions, sizes) when it unzips a
// download, and every zip written here is downloaded by the check.
package main

import (
	"archive/zip"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"time"
)

const core = "github.com/goredlock/goredlock"

// ours reports whether a module path is the core module or one nested in it.
func ours(p string) bool { return p == core || strings.HasPrefix(p, core+"/") }

func main() {
	if len(os.Args) < 2 {
		fail(errors.New("usage: modproxy pin|serve [flags] [arguments]"))
	}
	var err error
	switch os.Args[1] {
	case "pin":
		err = pin(os.Args[2:])
	case "serve":
		err = serve(os.Args[2:])
	default:
		err = fmt.Errorf("unknown command %q (pin or serve)", os.Args[1])
	}
	if err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "modproxy:", err)
	os.Exit(1)
}

// semverRE is a canonical semantic version as a module version spells it.
var semverRE = regexp.MustCompile(`^v(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?$`)

func checkVersion(v string) error {
	if !semverRE.MatchString(v) {
		return fmt.Errorf("version %q is not a canonical semantic version vX.Y.Z[-pre]", v)
	}
	if !strings.HasPrefix(v, "v0.") && !strings.HasPrefix(v, "v1.") {
		return fmt.Errorf("version %s: a major version above 1 needs a /vN module path, which these modules do not have", v)
	}
	return nil
}

// goMod is the part of `go mod edit -json` used here.
type goMod struct {
	Module  struct{ Path string }
	Go      string
	Require []struct{ Path, Version string }
	Replace []struct {
		Old struct{ Path, Version string }
	}
}

func readGoMod(file string) (*goMod, error) {
	out, err := exec.Command(goCmd(), "mod", "edit", "-json", file).Output()
	if err != nil {
		return nil, fmt.Errorf("go mod edit -json %s: %v%s", file, err, stderr(err))
	}
	var m goMod
	if err := json.Unmarshal(out, &m); err != nil {
		return nil, fmt.Errorf("%s: %v", file, err)
	}
	return &m, nil
}

func goCmd() string {
	if g := os.Getenv("GO"); g != "" {
		return g
	}
	return "go"
}

func stderr(err error) string {
	var ee *exec.ExitError
	if errors.As(err, &ee) && len(ee.Stderr) > 0 {
		return ": " + strings.TrimSpace(string(ee.Stderr))
	}
	return ""
}

func pin(args []string) error {
	fl := flag.NewFlagSet("pin", flag.ExitOnError)
	version := fl.String("version", "", "the version to require")
	drop := fl.Bool("dropreplace", false, "also drop the replace directives of these modules")
	fl.Parse(args)
	if err := checkVersion(*version); err != nil {
		return err
	}
	for _, file := range fl.Args() {
		m, err := readGoMod(file)
		if err != nil {
			return err
		}
		var edits []string
		for _, r := range m.Require {
			if ours(r.Path) && r.Version != *version {
				edits = append(edits, "-require="+r.Path+"@"+*version)
			}
		}
		if *drop {
			for _, r := range m.Replace {
				if ours(r.Old.Path) {
					old := r.Old.Path
					if r.Old.Version != "" {
						old += "@" + r.Old.Version
					}
					edits = append(edits, "-dropreplace="+old)
				}
			}
		}
		if len(edits) == 0 {
			continue
		}
		cmd := exec.Command(goCmd(), append(append([]string{"mod", "edit"}, edits...), file)...)
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("go mod edit %s: %v: %s", file, err, out)
		}
	}
	return nil
}

func serve(args []string) error {
	fl := flag.NewFlagSet("serve", flag.ExitOnError)
	dir := fl.String("dir", "", "the proxy's root directory")
	version := fl.String("version", "", "the version to serve")
	when := fl.String("time", "", "the version's time, RFC 3339 (default now)")
	root := fl.String("root", ".", "the tree the module directories are in")
	fl.Parse(args)
	if *dir == "" {
		return errors.New("serve: -dir is required")
	}
	if err := checkVersion(*version); err != nil {
		return err
	}
	t := time.Now().UTC()
	if *when != "" {
		var err error
		if t, err = time.Parse(time.RFC3339, *when); err != nil {
			return fmt.Errorf("-time: %v", err)
		}
	}
	for _, md := range fl.Args() {
		if err := serveOne(*dir, *version, t.UTC(), filepath.Join(*root, md)); err != nil {
			return err
		}
	}
	return nil
}

func serveOne(proxy, version string, t time.Time, modDir string) error {
	gomod := filepath.Join(modDir, "go.mod")
	m, err := readGoMod(gomod)
	if err != nil {
		return err
	}
	modBytes, err := os.ReadFile(gomod)
	if err != nil {
		return err
	}
	esc, err := escape(m.Module.Path)
	if err != nil {
		return err
	}
	escV, err := escape(version)
	if err != nil {
		return err
	}
	vdir := filepath.Join(proxy, filepath.FromSlash(esc), "@v")
	if err := os.MkdirAll(vdir, 0o755); err != nil {
		return err
	}
	var zbuf bytes.Buffer
	n, err := writeZip(&zbuf, m.Module.Path+"@"+version, modDir)
	if err != nil {
		return fmt.Errorf("%s: %v", m.Module.Path, err)
	}
	info, _ := json.Marshal(struct {
		Version string
		Time    string
	}{version, t.Format(time.RFC3339)})
	files := []struct {
		name string
		data []byte
	}{
		{escV + ".info", info},
		{escV + ".mod", modBytes},
		{escV + ".zip", zbuf.Bytes()},
		{"list", []byte(version + "\n")},
	}
	for _, f := range files {
		if err := os.WriteFile(filepath.Join(vdir, f.name), f.data, 0o644); err != nil {
			return err
		}
	}
	fmt.Printf("served %s@%s: %d files, %d bytes zipped\n", m.Module.Path, version, n, zbuf.Len())
	return nil
}

// writeZip writes the module zip of the module rooted at modDir: every
// regular file, named prefix/<slash path>, less other modules' directories,
// VCS directories and vendor directories.
func writeZip(w io.Writer, prefix, modDir string) (int, error) {
	zw := zip.NewWriter(w)
	n := 0
	err := filepath.WalkDir(modDir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(modDir, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if rel == "." {
				return nil
			}
			switch d.Name() {
			case ".git", ".hg", ".svn", ".bzr", "vendor":
				return filepath.SkipDir
			}
			if _, err := os.Lstat(filepath.Join(p, "go.mod")); err == nil {
				return filepath.SkipDir // another module
			}
			return nil
		}
		if !d.Type().IsRegular() {
			return nil // symbolic links and the like are left out
		}
		if path.Base(rel) == "go.mod" && rel != "go.mod" {
			return nil
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		zf, err := zw.Create(prefix + "/" + rel)
		if err != nil {
			return err
		}
		if _, err := io.Copy(zf, f); err != nil {
			return err
		}
		n++
		return nil
	})
	if err != nil {
		return 0, err
	}
	return n, zw.Close()
}

// escape is golang.org/x/mod/module's EscapePath and EscapeVersion: an
// upper-case letter becomes '!' and its lower case.
func escape(s string) (string, error) {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '!':
			return "", fmt.Errorf("%q: '!' cannot be escaped", s)
		case 'A' <= r && r <= 'Z':
			b.WriteByte('!')
			b.WriteRune(r + 'a' - 'A')
		default:
			b.WriteRune(r)
		}
	}
	return b.String(), nil
}
