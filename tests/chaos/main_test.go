package chaos

import (
	"os"
	"testing"

	"go.uber.org/goleak"
)

// TestMain runs the tests, or, in a client process that a scenario
// started (childEnv set), that client instead.
func TestMain(m *testing.M) {
	if cfg, ok := os.LookupEnv(childEnv); ok {
		os.Exit(childMain(cfg))
	}
	goleak.VerifyTestMain(m)
}
