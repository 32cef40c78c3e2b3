package miniredis_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/goredlock/goredlock/keyserver"
	"github.com/goredlock/goredlock/keyserver/redis"
	"github.com/goredlock/goredlock/redlock"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var bg = context.Background()

// steady is the server timeout of the tests whose TTLs are short: by
// default it is 5% of the TTL (50 ms for a second), which a loaded
// machine running the race detector can miss.
var steady = redlock.WithServerTimeout(200 * time.Millisecond)

// incarnationKey is the key of a store's marker (layout.IncarnationKey in
// the core module): an ID set with a TTL of incarnationTTL
// (layout.IncarnationTTL), whose age is what is gone of that TTL.
const (
	incarnationKey = "goredlock:incarnation"
	incarnationTTL = 1_000_000_000_000 * time.Millisecond
)

// start runs n miniredis servers, each with a marker an hour old (seed),
// closed when the test ends.
func start(t *testing.T, n int) []*miniredis.Miniredis {
	t.Helper()
	mrs := make([]*miniredis.Miniredis, n)
	for i := range mrs {
		mrs[i] = miniredis.RunT(t)
		seed(mrs[i], time.Now(), time.Hour)
	}
	return mrs
}

// seed sets mr's marker as if its store had held its data for age at now,
// the time its TIME reads (the real time unless SetTime was called): what
// a deployment that has run for a while looks like to a client's
// quarantine (redistest's SetHistory).
func seed(mr *miniredis.Miniredis, now time.Time, age time.Duration) {
	mr.Set(incarnationKey, fmt.Sprintf("miniredis-%d", now.UnixNano()))
	mr.SetTTL(incarnationKey, incarnationTTL-age)
}

// serversOn returns a key server (redis.FromURL) per miniredis, closed
// when the test ends.
func serversOn(t *testing.T, mrs []*miniredis.Miniredis) []keyserver.KeyServer {
	t.Helper()
	servers := make([]keyserver.KeyServer, len(mrs))
	for i, mr := range mrs {
		s, err := redis.FromURL("redis://" + mr.Addr())
		require.NoError(t, err)
		t.Cleanup(func() { s.Close() })
		servers[i] = s
	}
	return servers
}

// clientOn returns a client over mrs, closed when the test ends (before
// its servers, which close before the miniredis servers: cleanups run
// last in, first out).
func clientOn(t *testing.T, mrs []*miniredis.Miniredis, opts ...redlock.ClientOption) *redlock.Client {
	t.Helper()
	c, err := redlock.New(serversOn(t, mrs), opts...)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return c
}

// fastForward moves every server's clock for its TTLs on by d: miniredis
// expires keys only then.
func fastForward(mrs []*miniredis.Miniredis, d time.Duration) {
	for _, mr := range mrs {
		mr.FastForward(d)
	}
}

// holding returns how many of mrs hold value under key ("" for the key
// absent).
func holding(mrs []*miniredis.Miniredis, key, value string) int {
	n := 0
	for _, mr := range mrs {
		v, err := mr.Get(key)
		if (value == "" && err != nil) || (err == nil && v == value) {
			n++
		}
	}
	return n
}

// eventuallyAll waits until every server holds value under key ("" for
// the key absent): a call returns once a quorum answered, and its calls to
// the others finish on their own.
func eventuallyAll(t *testing.T, mrs []*miniredis.Miniredis, key, value, when string) {
	t.Helper()
	require.Eventually(t, func() bool { return holding(mrs, key, value) == len(mrs) }, 5*time.Second, time.Millisecond,
		"%s: %d of %d servers hold %q under %q", when, holding(mrs, key, value), len(mrs), value, key)
}
