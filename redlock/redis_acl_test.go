package redlock_test

import (
	"context"
	"net/url"
	"testing"
	"time"

	redigo "github.com/gomodule/redigo/redis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goredlock/goredlock/internal/redistest"
	"github.com/goredlock/goredlock/keyserver"
	"github.com/goredlock/goredlock/keyserver/redis"
	"github.com/goredlock/goredlock/redlock"
)

// leastPrivilege is the usual hardening recipe (rule 14): every command
// but those of @dangerous (INFO, CONFIG, ROLE, CLIENT, KEYS...).
var leastPrivilege = []any{"~*", "&*", "+@all", "-@dangerous"}

// aclUser creates user app with password pw and rules on each node, and
// returns the nodes' URLs for it.
func aclUser(t *testing.T, cluster *redistest.Cluster, rules ...any) []string {
	t.Helper()
	urls := make([]string, len(cluster.Nodes))
	for i, n := range cluster.Nodes {
		setUser(n, rules...)
		u, err := url.Parse(n.URL(""))
		require.NoError(t, err)
		u.User = url.UserPassword("app", "pw")
		urls[i] = u.String()
	}
	return urls
}

// setUser (re)creates user app on n: a node restarted empty has lost it.
func setUser(n *redistest.Node, rules ...any) {
	n.MustDo("ACL", append([]any{"SETUSER", "app", "reset", "on", ">pw"}, rules...)...)
}

// TestRedisLeastPrivilege is rule 14: a user with +@all -@dangerous gets
// every feature (see everyFeature); and two of three servers restarted
// empty while a lock is held keep a second client out for the TTL, told by
// the store's marker alone (no INFO).
func TestRedisLeastPrivilege(t *testing.T) {
	cluster := redistest.Start(t, 3)
	urls := aclUser(t, cluster, leastPrivilege...)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	newClient := clientsAt(t, urls)
	everyFeature(ctx, t, newClient)
	c, other := newClient(), newClient()

	// Two of three restarted empty while held: the marker (SET NX GET, no
	// INFO) tells the client they lost their data.
	const ttl = 3 * time.Second
	_, err := c.Acquire(ctx, "held", ttl)
	require.NoError(t, err)
	began := time.Now()
	for _, n := range cluster.Nodes[:2] {
		n.Restart()
		setUser(n, leastPrivilege...)
	}
	fresh := newClient()
	_, err = fresh.TryAcquire(ctx, "held", ttl)
	require.ErrorIs(t, err, redlock.ErrHeldElsewhere, "a client made after the restarts is refused too")
	require.ErrorIs(t, err, redlock.ErrQuarantined)
	// The undo of its refused grants runs on after TryAcquire returns, and
	// Close waits for it: till then a restarted server refuses other, whose
	// attempt is then decided before its other restarted server answers,
	// quarantined (a loaded CI run read "2 refused, 1 not waited for").
	require.NoError(t, fresh.Close())
	for {
		l, err := other.TryAcquire(ctx, "held", ttl)
		if err == nil {
			assert.GreaterOrEqual(t, time.Since(began), ttl, "granted only once the TTL has passed since the restarts")
			require.NoError(t, l.Release(ctx))
			break
		}
		// ErrHeldElsewhere while the node that kept its data still holds
		// the key; then the quarantine alone.
		require.ErrorIs(t, err, redlock.ErrQuarantined, "refused, the restarted servers quarantined")
		require.NoError(t, ctx.Err(), "never granted")
		time.Sleep(100 * time.Millisecond)
	}
}

// TestRedisWithoutScripting is rule 15: on servers that cannot run scripts
// (an ACL user without @scripting; a server whose EVAL, EVALSHA and SCRIPT
// are renamed away; a user denied a command the scripts call), every call
// fails at once, typed as permanent and
// naming the missing command, and leaves no key behind on any server (but
// the store's marker): a plain SET NX would have granted a lock that no
// release could undo.
func TestRedisWithoutScripting(t *testing.T) {
	for _, tc := range []struct {
		name    string
		urls    func(*redistest.Cluster) []string
		opts    []redistest.Option
		missing string
	}{
		{"ACL without @scripting", func(c *redistest.Cluster) []string {
			return aclUser(t, c, append(leastPrivilege, "-@scripting")...)
		}, nil, "EVAL"},
		{"scripting commands renamed away", func(c *redistest.Cluster) []string { return c.URLs("") },
			[]redistest.Option{redistest.WithArgs("--rename-command", "EVAL", "", "--rename-command", "EVALSHA", "",
				"--rename-command", "SCRIPT", "")}, "EVAL"},
		{"ACL without a command the scripts call", func(c *redistest.Cluster) []string {
			return aclUser(t, c, append(leastPrivilege, "-zpopmin")...)
		}, nil, "ZPOPMIN"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cluster := redistest.Start(t, 3, tc.opts...)
			c, err := redlock.New(serversAt(t, tc.urls(cluster)), redlock.WithRetryCount(-1))
			require.NoError(t, err)
			t.Cleanup(func() { c.Close() })
			fenced, err := redlock.New(serversAt(t, tc.urls(cluster)), redlock.WithFencing())
			require.NoError(t, err)
			t.Cleanup(func() { fenced.Close() })
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			noKeys := func(call string) {
				t.Helper()
				for _, n := range cluster.Nodes {
					keys, err := redigo.Strings(n.MustDo("KEYS", "*"), nil)
					require.NoError(t, err)
					for _, k := range keys {
						assert.Equal(t, "goredlock:incarnation", k, "%s left a key on %s", call, n.Addr())
					}
				}
			}
			refused := func(call string, err error) {
				t.Helper()
				require.Error(t, err, call)
				assert.ErrorIs(t, err, keyserver.ErrPermanent, call)
				var re *redis.RefusedError
				require.ErrorAs(t, err, &re, call)
				assert.Contains(t, re.Commands, tc.missing, call)
				assert.Contains(t, err.Error(), tc.missing+" refused", call)
				assert.Contains(t, err.Error(), "to allow it: ", call)
				noKeys(call)
			}
			began := time.Now()
			_, err = c.Acquire(ctx, "job", 10*time.Second)
			refused("Acquire", err)
			t.Log(err)
			assert.Less(t, time.Since(began), 5*time.Second, "no retry loop")
			_, err = c.TryAcquire(ctx, "job", 10*time.Second)
			refused("TryAcquire", err)
			_, err = c.AcquireAll(ctx, []string{"a", "b"}, 10*time.Second)
			refused("AcquireAll", err)
			_, err = fenced.Acquire(ctx, "fenced", 10*time.Second)
			refused("a fenced Acquire", err)
			_, err = c.Semaphore("pool", 2).TryAcquire(ctx, 10*time.Second)
			refused("Semaphore.TryAcquire", err)
			_, err = c.RWMutex("rw").TryRLock(ctx, 10*time.Second)
			refused("RWMutex.TryRLock", err)
			_, err = c.Election("e").Campaign(ctx, 10*time.Second, "me")
			refused("Election.Campaign", err)
			refused("Do", c.Do(ctx, "do", 10*time.Second, func(context.Context) error {
				t.Error("Do ran fn without the lock")
				return nil
			}))
		})
	}
}

// minimalACL is docs/redis.md's minimal ACL: the commands every feature
// needs, and those of the wake-ups (Pub/Sub), for keys under app: only.
var minimalACL = []any{"~app:*", "~{app:*", "~goredlock:incarnation", "&goredlock:*",
	"+time", "+set", "+get", "+exists", "+eval", "+evalsha", "+script|load",
	"+del", "+hget", "+hmget", "+hset", "+mget", "+pexpire", "+pttl",
	"+zadd", "+zcard", "+zcount", "+zpopmin", "+zrange", "+zrank", "+zrem", "+zremrangebyscore", "+zscore",
	"+subscribe", "+unsubscribe", "+publish"}

// TestRedisMinimalACL: docs/redis.md's minimal ACL, for a client whose
// keys are under the prefix app:, gets every feature, and so does the
// same ACL without Pub/Sub (waiters poll); a name outside the prefix is
// refused at once, naming the key pattern that would allow it.
func TestRedisMinimalACL(t *testing.T) {
	withoutPubSub := minimalACL[:len(minimalACL)-3]
	withoutPubSub = append(append([]any(nil), withoutPubSub[:3]...), withoutPubSub[4:]...) // and no &goredlock:*
	for name, rules := range map[string][]any{"minimal": minimalACL, "minimal without Pub/Sub": withoutPubSub} {
		t.Run(name, func(t *testing.T) {
			cluster := redistest.Start(t, 3)
			urls := aclUser(t, cluster, rules...)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			newClient := clientsAt(t, urls, redlock.WithKeyPrefix("app:"))
			everyFeature(ctx, t, newClient)

			c := clientsAt(t, urls)()
			_, err := c.TryAcquire(ctx, "job", 10*time.Second)
			require.ErrorIs(t, err, keyserver.ErrPermanent, "a key outside the ACL's patterns")
			var re *redis.RefusedError
			require.ErrorAs(t, err, &re)
			assert.ErrorContains(t, err, `ACL key pattern (~) that covers "job"`)
			for _, n := range cluster.Nodes {
				assert.Nil(t, n.MustDo("GET", "job"))
			}
		})
	}
}

// clientsAt returns a function that makes a client over a key server per
// URL, closed when t ends.
func clientsAt(t *testing.T, urls []string, opts ...redlock.ClientOption) func(...redlock.ClientOption) *redlock.Client {
	return func(more ...redlock.ClientOption) *redlock.Client {
		c, err := redlock.New(serversAt(t, urls), append(append([]redlock.ClientOption(nil), opts...), more...)...)
		require.NoError(t, err)
		t.Cleanup(func() { c.Close() })
		return c
	}
}

// everyFeature takes what rule 14 names, on clients newClient makes:
// Acquire, TryAcquire refused while the lock is held elsewhere, Extend,
// Release, a waiter handed the lock, Do, a fenced lock, a semaphore,
// AcquireAll, a read-write lock and an election.
func everyFeature(ctx context.Context, t *testing.T, newClient func(...redlock.ClientOption) *redlock.Client) {
	t.Helper()
	c, other := newClient(), newClient()

	l, err := c.Acquire(ctx, "job", 10*time.Second)
	require.NoError(t, err, "Acquire")
	_, err = other.TryAcquire(ctx, "job", 10*time.Second)
	require.ErrorIs(t, err, redlock.ErrHeldElsewhere, "TryAcquire while held elsewhere")
	require.NoError(t, l.Extend(ctx, 20*time.Second), "Extend")
	waiter := make(chan error, 1)
	go func() {
		l, err := other.Acquire(ctx, "job", 10*time.Second, redlock.WithRetryCount(-1))
		if err == nil {
			err = l.Release(ctx)
		}
		waiter <- err
	}()
	time.Sleep(100 * time.Millisecond)
	require.NoError(t, l.Release(ctx), "Release")
	require.NoError(t, <-waiter, "a waiter takes the lock once released")

	ran := false
	require.NoError(t, c.Do(ctx, "do", 10*time.Second, func(context.Context) error { ran = true; return nil }), "Do")
	assert.True(t, ran)

	fenced := newClient(redlock.WithFencing())
	l, err = fenced.Acquire(ctx, "fenced", 10*time.Second)
	require.NoError(t, err, "a fenced lock")
	first := l.Fence()
	assert.NotZero(t, first)
	require.NoError(t, l.Release(ctx))
	l, err = fenced.Acquire(ctx, "fenced", 10*time.Second)
	require.NoError(t, err)
	assert.Greater(t, l.Fence(), first, "fences grow")
	require.NoError(t, l.Release(ctx))

	sem := c.Semaphore("pool", 2)
	p1, err := sem.Acquire(ctx, 10*time.Second)
	require.NoError(t, err, "a semaphore's permit")
	p2, err := sem.TryAcquire(ctx, 10*time.Second)
	require.NoError(t, err, "its second permit")
	_, err = sem.TryAcquire(ctx, 10*time.Second)
	require.ErrorIs(t, err, redlock.ErrHeldElsewhere, "no third permit")
	require.NoError(t, p1.Extend(ctx, 10*time.Second))
	require.NoError(t, p1.Release(ctx))
	require.NoError(t, p2.Release(ctx))

	all, err := c.AcquireAll(ctx, []string{"a", "b", "c"}, 10*time.Second)
	require.NoError(t, err, "AcquireAll")
	_, err = other.TryAcquire(ctx, "b", 10*time.Second)
	require.ErrorIs(t, err, redlock.ErrHeldElsewhere, "a name of the set is held")
	require.NoError(t, all.Extend(ctx, 10*time.Second))
	require.NoError(t, all.Release(ctx))

	rw := c.RWMutex("rw")
	r1, err := rw.RLock(ctx, 10*time.Second)
	require.NoError(t, err, "a read hold")
	_, err = other.RWMutex("rw").TryLock(ctx, 10*time.Second)
	require.ErrorIs(t, err, redlock.ErrHeldElsewhere, "no writer while read")
	require.NoError(t, r1.Release(ctx))

	lead, err := c.Election("e").Campaign(ctx, 10*time.Second, "me")
	require.NoError(t, err, "an election")
	leader, err := other.Election("e").Leader(ctx)
	require.NoError(t, err)
	assert.Equal(t, "me", leader)
	require.NoError(t, lead.Release(ctx))
}

// TestRedisWithoutEvalsha: a user denied EVALSHA (and SCRIPT LOAD) still
// gets every feature: each script is sent by its source.
func TestRedisWithoutEvalsha(t *testing.T) {
	cluster := redistest.Start(t, 3)
	urls := aclUser(t, cluster, append(leastPrivilege, "-evalsha", "-script")...)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	everyFeature(ctx, t, clientsAt(t, urls))
}
