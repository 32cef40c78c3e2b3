package redisfence_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
	"go.uber.org/goleak"

	"github.com/goredlock/goredlock/fence/redisfence"
	"github.com/goredlock/goredlock/internal/redistest"
	"github.com/goredlock/goredlock/keyserver"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// start starts a data Redis and returns a guard over a pool for it, and
// the node, for checks that go around the guard.
func start(t *testing.T, opts ...redistest.Option) (*redisfence.Guard, *redistest.Node) {
	t.Helper()
	node := redistest.Start(t, 1, opts...).Nodes[0]
	pool := &redis.Pool{
		DialContext: func(ctx context.Context) (redis.Conn, error) {
			return redis.DialContext(ctx, "tcp", node.Addr())
		},
		MaxIdle: 32,
	}
	t.Cleanup(func() { pool.Close() })
	return redisfence.New(pool), node
}

// get is key's value as the node has it, "" for none.
func get(t *testing.T, node *redistest.Node, key string) string {
	t.Helper()
	v, err := redis.String(node.Do("GET", key))
	if err != nil && err != redis.ErrNil {
		t.Fatalf("GET %s: %v", key, err)
	}
	return v
}

// wantStale checks that err is a *StaleError for key, fence and seen that
// matches ErrStale.
func wantStale(t *testing.T, err error, key string, fence, seen uint64) {
	t.Helper()
	if !errors.Is(err, redisfence.ErrStale) {
		t.Fatalf("err = %v, want ErrStale", err)
	}
	var se *redisfence.StaleError
	if !errors.As(err, &se) {
		t.Fatalf("err = %T, want a *StaleError", err)
	}
	if want := (redisfence.StaleError{Key: key, Fence: fence, Seen: seen}); *se != want {
		t.Errorf("StaleError %+v, want %+v", *se, want)
	}
}

// Two holders, fences 7 and 9, write in either order: 9 after 7 writes,
// 7 after 9 is refused and changes nothing.
func TestSetRefusesALowerFence(t *testing.T) {
	g, node := start(t)
	ctx := context.Background()
	for _, order := range [][]uint64{{7, 9}, {9, 7}} {
		key := fmt.Sprintf("invoice:%d-%d", order[0], order[1])
		for _, fence := range order {
			err := g.Set(ctx, key, []byte(fmt.Sprint("by ", fence)), fence, 0)
			if fence == 7 && order[0] == 9 {
				wantStale(t, err, key, 7, 9)
			} else if err != nil {
				t.Fatalf("order %v: Set with fence %d: %v", order, fence, err)
			}
		}
		if v := get(t, node, key); v != "by 9" {
			t.Errorf("order %v: value %q, want %q", order, v, "by 9")
		}
		if f := get(t, node, redisfence.FenceKey(key)); f != "9" {
			t.Errorf("order %v: fence stored %q, want 9", order, f)
		}
		if ttl, _ := redis.Int(node.Do("PTTL", redisfence.FenceKey(key))); ttl != -1 {
			t.Errorf("order %v: the fence has a TTL (%d ms), want none", order, ttl)
		}
	}
}

// One holder writes as often as it likes with its fence.
func TestSetWithTheSameFenceWritesAgain(t *testing.T) {
	g, node := start(t)
	ctx := context.Background()
	for i := range 5 {
		if err := g.Set(ctx, "cart", []byte(fmt.Sprint("write ", i)), 5, 0); err != nil {
			t.Fatalf("write %d with the same fence: %v", i, err)
		}
		if v := get(t, node, "cart"); v != fmt.Sprint("write ", i) {
			t.Fatalf("after write %d: value %q", i, v)
		}
	}
	// The next holder's, then the first one's again.
	if err := g.Set(ctx, "cart", []byte("next"), 6, 0); err != nil {
		t.Fatal(err)
	}
	wantStale(t, g.Set(ctx, "cart", []byte("late"), 5, 0), "cart", 5, 6)
	if v := get(t, node, "cart"); v != "next" {
		t.Errorf("value %q after a stale write, want %q", v, "next")
	}
}

// Concurrent writers with random fences leave the value of the highest
// fence, whatever the order they reached the server in.
func TestConcurrentWritersLeaveTheHighestFence(t *testing.T) {
	g, node := start(t)
	ctx := context.Background()
	const writers, rounds = 16, 40
	refused := 0
	for round := range rounds {
		key := fmt.Sprint("account:", round)
		fences := make([]uint64, writers)
		var highest uint64
		for i := range fences {
			fences[i] = 1 + rand.Uint64N(1000)
			highest = max(highest, fences[i])
		}
		errs := make([]error, writers)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i, fence := range fences {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				for range 3 { // a holder writes more than once
					if errs[i] = g.Set(ctx, key, []byte(fmt.Sprint("fence ", fence)), fence, 0); errs[i] != nil {
						return
					}
				}
			}()
		}
		close(start)
		wg.Wait()
		for i, err := range errs {
			var se *redisfence.StaleError
			switch {
			case err == nil:
			case errors.As(err, &se) && se.Fence == fences[i] && se.Seen > se.Fence:
				refused++
			default:
				t.Errorf("round %d, writer %d with fence %d: %v", round, i, fences[i], err)
			}
			if fences[i] == highest && err != nil {
				t.Errorf("round %d: the highest fence %d was refused: %v", round, highest, err)
			}
		}
		if v, want := get(t, node, key), fmt.Sprint("fence ", highest); v != want {
			t.Errorf("round %d: value %q, want %q (fences %v)", round, v, want, fences)
		}
		if f, want := get(t, node, redisfence.FenceKey(key)), fmt.Sprint(highest); f != want {
			t.Errorf("round %d: fence stored %s, want %s", round, f, want)
		}
	}
	t.Logf("%d rounds of %d writers: %d writers refused as stale", rounds, writers, refused)
	if refused == 0 {
		t.Error("no writer refused: did the writers run one after the other?")
	}
}

// Fences compare exactly over all of uint64, past where Lua's numbers are
// exact (2^53).
func TestSetComparesLargeFencesExactly(t *testing.T) {
	g, node := start(t)
	ctx := context.Background()
	for _, tc := range []struct{ low, high uint64 }{
		{1 << 53, 1<<53 + 1},
		{math.MaxUint64 - 1, math.MaxUint64},
		{9, 10},
		{99, 100},
	} {
		key := fmt.Sprint("big:", tc.high)
		if err := g.Set(ctx, key, []byte("high"), tc.high, 0); err != nil {
			t.Fatal(err)
		}
		wantStale(t, g.Set(ctx, key, []byte("low"), tc.low, 0), key, tc.low, tc.high)
		if v := get(t, node, key); v != "high" {
			t.Errorf("%d after %d: value %q", tc.low, tc.high, v)
		}
	}
}

// A TTL expires the value, never the fence: a stale holder cannot write
// once the value is gone.
func TestSetTTLExpiresTheValueOnly(t *testing.T) {
	g, node := start(t)
	ctx := context.Background()
	if err := g.Set(ctx, "session", []byte("a"), 3, 50*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if ttl, _ := redis.Int(node.Do("PTTL", "session")); ttl <= 0 || ttl > 50 {
		t.Errorf("PTTL %d, want within (0, 50]", ttl)
	}
	time.Sleep(100 * time.Millisecond)
	if v := get(t, node, "session"); v != "" {
		t.Fatalf("value %q after its TTL", v)
	}
	wantStale(t, g.Set(ctx, "session", []byte("stale"), 2, 0), "session", 2, 3)
	// A write with ttl 0 drops an expiry, as SET does.
	if err := g.Set(ctx, "session", []byte("b"), 3, time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := g.Set(ctx, "session", []byte("c"), 3, 0); err != nil {
		t.Fatal(err)
	}
	if ttl, _ := redis.Int(node.Do("PTTL", "session")); ttl != -1 {
		t.Errorf("PTTL %d after a write with ttl 0, want -1", ttl)
	}
}

func TestInvalidArguments(t *testing.T) {
	g := redisfence.New(failingPool{})
	ctx := context.Background()
	for name, err := range map[string]error{
		"Set, empty key":  g.Set(ctx, "", nil, 1, 0),
		"Set, fence 0":    g.Set(ctx, "k", nil, 0, 0),
		"Set, ttl < 0":    g.Set(ctx, "k", nil, 1, -time.Second),
		"Set, ttl < 1ms":  g.Set(ctx, "k", nil, 1, time.Microsecond),
		"Eval, no keys":   second(g.Eval(ctx, "return 1", nil, 1)),
		"Eval, empty key": second(g.Eval(ctx, "return 1", []string{""}, 1)),
		"Eval, fence 0":   second(g.Eval(ctx, "return 1", []string{"k"}, 0)),
	} {
		if !errors.Is(err, keyserver.ErrInvalidArgument) {
			t.Errorf("%s: %v, want ErrInvalidArgument", name, err)
		}
	}
	// A good call reaches the pool.
	if err := g.Set(ctx, "k", nil, 1, time.Millisecond); !errors.Is(err, errNoConn) {
		t.Errorf("a good call: %v, want the pool's error", err)
	}
}

var errNoConn = errors.New("no connection")

type failingPool struct{}

func (failingPool) GetContext(context.Context) (redis.Conn, error) { return nil, errNoConn }

func second(_ any, err error) error { return err }

// Eval runs the caller's script only for a fence that passes, with KEYS
// and ARGV as the caller gave them, and returns its reply.
func TestEval(t *testing.T) {
	g, node := start(t)
	ctx := context.Background()
	const script = `
-- a comment on the first line is fine
local n = redis.call('INCRBY', KEYS[1], ARGV[1])
redis.call('HSET', KEYS[2], 'last', ARGV[2])
return {n, #KEYS, #ARGV}`
	keys := []string{"{stock}:count", "{stock}:meta"}
	reply, err := redis.Values(g.Eval(ctx, script, keys, 9, 5, "by 9"))
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(reply...); got != fmt.Sprint(int64(5), int64(2), int64(2)) {
		t.Errorf("reply %v, want [5 2 2]: the script sees only the caller's KEYS and ARGV", reply)
	}
	if _, err := g.Eval(ctx, script, keys, 9, 1, "by 9 again"); err != nil {
		t.Fatalf("the same fence again: %v", err)
	}
	_, err = g.Eval(ctx, script, keys, 7, 100, "by 7")
	wantStale(t, err, keys[0], 7, 9)
	if n := get(t, node, keys[0]); n != "6" {
		t.Errorf("count %s, want 6: the stale script ran", n)
	}
	if last, _ := redis.String(node.Do("HGET", keys[1], "last")); last != "by 9 again" {
		t.Errorf("meta %q, want %q", last, "by 9 again")
	}
	if f := get(t, node, redisfence.FenceKey(keys[0])); f != "9" {
		t.Errorf("fence %s, want 9", f)
	}

	// A script that raises an error leaves the fence as it was; its line
	// is the whole script's, 15 more than the caller's.
	_, err = g.Eval(ctx, "redis.call('SET', KEYS[1], 'x')\nredis.call('NOSUCHCOMMAND')", []string{"{stock}:other"}, 10)
	if err == nil || errors.Is(err, redisfence.ErrStale) {
		t.Fatalf("a failing script: %v", err)
	}
	if !strings.Contains(err.Error(), "_script:17") {
		t.Errorf("a failing script's error %q does not name line 17 (2 + 15)", err)
	}
	if f := get(t, node, redisfence.FenceKey("{stock}:other")); f != "" {
		t.Errorf("fence %q after a failing script, want none", f)
	}
	// A script's own error reply is passed on, not taken for a stale fence.
	_, err = g.Eval(ctx, "return redis.error_reply('FENCESTALE soon')", []string{"k"}, 1)
	if err == nil || errors.Is(err, redisfence.ErrStale) {
		t.Errorf("the script's own error reply: %v", err)
	}
	// A script with no return value replies nil.
	if reply, err := g.Eval(ctx, "redis.call('SET', KEYS[1], ARGV[1])", []string{"plain"}, 1, "v"); err != nil || reply != nil {
		t.Errorf("reply %v, %v; want nil, nil", reply, err)
	}
}

// The fence key hashes to its data key's Cluster slot, so both scripts
// run on a Cluster node, for keys with and without a hash tag.
func TestClusterSlots(t *testing.T) {
	for key, want := range map[string]string{
		"cart":         "{cart}:fence-seen",
		"{user:1}:x":   "{user:1}:x:fence-seen",
		"a{}b":         "{a{}b}:fence-seen", // an empty tag is none
		"a{b":          "{a{b}:fence-seen",
		"order:{7}:ab": "order:{7}:ab:fence-seen",
	} {
		if got := redisfence.FenceKey(key); got != want {
			t.Errorf("FenceKey(%q) = %q, want %q", key, got, want)
		}
	}
	g, _ := start(t, redistest.WithClusterMode())
	ctx := context.Background()
	for _, key := range []string{"cart", "{user:1}:x", "a{b"} {
		if err := g.Set(ctx, key, []byte("v"), 2, 0); err != nil {
			t.Errorf("Set %q on a Cluster node: %v", key, err)
		}
		wantStale(t, g.Set(ctx, key, []byte("v"), 1, 0), key, 1, 2)
	}
	if _, err := g.Eval(ctx, "return redis.call('SET', KEYS[2], 'v')", []string{"{user:1}:x", "{user:1}:y"}, 2); err != nil {
		t.Errorf("Eval on a Cluster node: %v", err)
	}
}

// A call ends with its context, here on a Redis that does not answer.
func TestContextEndsTheCall(t *testing.T) {
	g, node := start(t)
	if err := g.Set(context.Background(), "k", []byte("v"), 1, 0); err != nil { // a connection in the pool
		t.Fatal(err)
	}
	node.Pause()
	defer node.Resume()
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	began := time.Now()
	err := g.Set(ctx, "k", []byte("v"), 2, 0)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("err = %v, want context.DeadlineExceeded", err)
	}
	if took := time.Since(began); took > 2*time.Second {
		t.Errorf("the call took %v with a deadline of 100ms", took)
	}
}
