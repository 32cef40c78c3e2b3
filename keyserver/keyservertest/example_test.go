package keyservertest_test

import (
	"testing"

	"github.com/goredlock/goredlock/keyserver"
	"github.com/goredlock/goredlock/keyserver/keyservertest"
	"github.com/goredlock/goredlock/keyserver/memory"
)

// A key server proves itself with one test in its own package, which runs
// the suite with a fresh server per subtest; the memory server stands in
// for yours here.
func ExampleRun() {
	testConformance := func(t *testing.T) {
		keyservertest.Run(t, func(t *testing.T) keyserver.KeyServer {
			s := memory.New()
			t.Cleanup(func() { s.Close() })
			return s
		})
	}
	_ = testConformance // go test runs it as func TestConformance(t *testing.T)
}
