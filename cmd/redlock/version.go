package main

import (
	"fmt"
	"runtime/debug"
)

// version is redlock --version: the module version the binary was built
// from, as the go command recorded it ("(devel)" for a build from a
// checkout without version control information).
func (t *tool) version(args []string) error {
	if len(args) > 0 {
		return usagef("", "unexpected %q after version", args[0])
	}
	fmt.Fprintln(t.stdout, "redlock "+moduleVersion())
	return nil
}

// moduleVersion is the main module's version from the build information.
func moduleVersion() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok || bi.Main.Version == "" {
		return "(unknown)"
	}
	return bi.Main.Version
}
