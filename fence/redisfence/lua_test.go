package redisfence

import (
	"strings"
	"testing"
)

// Eval puts the caller's script in place of one line of eval.lua: it must
// be there once, on the line Eval's doc counts from (the caller's line n
// is the script's line n+15).
func TestEvalBodyLine(t *testing.T) {
	if n := strings.Count(evalSrc, bodyLine); n != 1 {
		t.Fatalf("eval.lua has the body line %d times, want once", n)
	}
	before, _, _ := strings.Cut(evalSrc, bodyLine)
	if line := strings.Count(before, "\n") + 1; line != 16 {
		t.Errorf("the body is on line %d of eval.lua, want 16 (Eval's doc says 15 more)", line)
	}
	wrapped := wrap("return 1")
	if strings.Contains(wrapped, bodyLine) || !strings.Contains(wrapped, "\nreturn 1\nend\n") {
		t.Errorf("wrap left the body out:\n%s", wrapped)
	}
}

// Both scripts call the guard's admit: it must be in place of their
// guard line.
func TestScriptsHaveTheGuard(t *testing.T) {
	for name, src := range map[string]string{"set.lua": guarded(setFile), "eval.lua": evalSrc} {
		if strings.Contains(src, guardLine) || !strings.Contains(src, "local function admit(") {
			t.Errorf("%s without the guard:\n%s", name, src)
		}
	}
}
