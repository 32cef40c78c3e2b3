package redis_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	redigo "github.com/gomodule/redigo/redis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goredlock/goredlock/internal/redistest"
	"github.com/goredlock/goredlock/keyserver"
	"github.com/goredlock/goredlock/keyserver/redis"
)

// The two halves of a password no FromURL error may show, whole or in part.
const pwA, pwB = "Pw1hunter", "Pw2swordfish"

func TestFromURLErrorsNeverShowThePassword(t *testing.T) {
	for _, tc := range []struct {
		url  string
		opts []redis.Option
	}{
		{url: "redis://:" + pwA + "%zz" + pwB + "@host:6379"},        // bad escape in the password
		{url: "redis://u:" + pwA + "%" + pwB + "@host"},              // bare % in the password
		{url: "redis://u:" + pwA + "@host:port"},                     // port not a number
		{url: "redis://u:" + pwA + "@host:99999"},                    // port out of range
		{url: "redis://u:" + pwA + "@host:"},                         // empty port
		{url: "redis://u:" + pwA + "@ho st"},                         // bad host
		{url: "redis://u:" + pwA + "@[::1"},                          // bad IPv6 literal
		{url: "redis://u:" + pwA + "@host\x7f"},                      // control character
		{url: "http://u:" + pwA + "@host"},                           // wrong scheme
		{url: pwA + ":" + pwB + "@host:6379"},                        // no scheme, password as scheme
		{url: "u:" + pwA + "@host:6379"},                             // no scheme
		{url: "redis:u:" + pwA + "@host"},                            // no slashes
		{url: "redis://:" + pwA + "/" + pwB + "@host"},               // unescaped / in the password
		{url: "redis://u:" + pwA + "/" + pwB + "@host"},              // the same with a user
		{url: "redis://u:1234/" + pwB + "@host"},                     // the same, a numeric first half
		{url: "redis://" + pwA + "/" + pwB + "@host"},                // the same, password as user
		{url: "redis://" + pwA + "?" + pwB + "=1@host"},              // unescaped ?
		{url: "redis://" + pwA + "#" + pwB + "@host"},                // unescaped #
		{url: "redis://:" + pwA + "@host#" + pwB},                    // fragment
		{url: "redis://:" + pwA + "@host/" + pwB},                    // path not a database
		{url: "redis://:" + pwA + "@host/99"},                        // database out of range
		{url: "redis://:" + pwA + "@host/-1"},                        // negative database
		{url: "redis://:" + pwA + "@host/1?db=2"},                    // conflicting databases
		{url: "redis://:" + pwA + "@host?db=" + pwB},                 // bad db value
		{url: "redis://:" + pwA + "@host?password=" + pwB},           // unknown parameter
		{url: "redis://:" + pwA + "@host?dial_timeout=" + pwB},       // bad duration
		{url: "redis://:" + pwA + "@host?client_name=" + pwB + "+x"}, // space in the name
		{url: "redis://:" + pwA + "@host?db=1&db=1"},                 // repeated
		{url: "redis://:" + pwA + "@host?x=%zz" + pwB},               // malformed query
		{url: "redis://:" + pwA + "@host?" + pwB + ";x"},             // semicolon
		{url: "redis://:" + pwA + "@host?" + pwA},                    // the password as a parameter
		{url: "redis://:" + pwA + "@" + pwA + "?x=1"},                // a host that is the password
		{url: "redis://:" + pwA + "@" + pwA + "/99"},                 // the same, a bad path
		{url: "redis://:" + pwA + "@host", opts: []redis.Option{redis.WithPooledConnections(0)}},
	} {
		s, err := redis.FromURL(tc.url, tc.opts...)
		if !assert.Error(t, err, tc.url) {
			s.Close()
			continue
		}
		assert.ErrorIs(t, err, keyserver.ErrInvalidArgument, tc.url)
		for _, secret := range []string{pwA, pwB, "hunter", "swordfish", "%zz"} {
			assert.NotContains(t, err.Error(), secret, tc.url)
		}
	}
}

func TestFromURLSaysWhatIsWrong(t *testing.T) {
	for url, want := range map[string]string{
		"redis://h?dail_timeout=1s":                   `unknown parameter "dail_timeout"`,
		"redis://h?max_connections=9":                 `unknown parameter "max_connections"`,
		"redis://h/16":                                "above 15",
		"redis://h?db=16":                             "above 15",
		"redis://h/-1":                                "not a number",
		"redis://h/1/":                                "not a number",
		"redis://h/1?db=2":                            "differs from the database in the path",
		"redis://h?db=3&db=3":                         "db is given twice",
		"redis://h?dial_timeout=1s&connect_timeout=2": "dial_timeout is given twice",
		"redis://h?read_timeout=0":                    "not positive",
		"redis://h?write_timeout=-1s":                 "not positive",
		"redis://h?dial_timeout=soon":                 "not a duration",
		"redis://h?client_name=":                      "empty",
		"redis://h?wait=0":                            "at least one replica",
		"redis://h?wait=x":                            "not a count",
		"redis://h?waitaof=2,1":                       "L 0 or 1",
		"redis://h?waitaof=0,0":                       "not both 0",
		"redis://h?waitaof=1":                         "not L,N",
		"redis://h?wait=1&waitaof=1,0":                "do not go together",
		"redis://h#x":                                 "fragment",
		"redis://h:0":                                 "port",
		"redis://:a/b@h":                              "port",
		"redis://1.2.3.4/p@h":                         "percent-encode",
		"redis://:p%zz@h":                             "%25",
		"localhost:6379":                              "scheme",
		"//localhost:6379":                            "no scheme",
	} {
		_, err := redis.FromURL(url)
		if assert.Error(t, err, url) {
			assert.ErrorIs(t, err, keyserver.ErrInvalidArgument, url)
			assert.Contains(t, err.Error(), want, url)
		}
	}
	_, err := redis.FromURL("redis://h?wait=1", redis.WithPooledConnections())
	assert.ErrorIs(t, err, keyserver.ErrInvalidArgument)
	assert.ErrorContains(t, err, "pipelined connection", "WAIT confirms its own connection's writes")
	_, err = redis.FromURL("redis://h", redis.WithWaitAOF(2, 0))
	assert.ErrorIs(t, err, keyserver.ErrInvalidArgument)

	_, err = redis.FromURL("redis://db.example:7000/99")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "db.example:7000", "an error past the user info names the server")
}

func TestFromURLAccepts(t *testing.T) {
	for url, name := range map[string]string{
		"redis://":                    "localhost:6379",
		"redis://h":                   "h:6379",
		"redis://h/":                  "h:6379",
		"redis://h:7000/0":            "h:7000",
		"redis://[::1]:7000/15?db=15": "[::1]:7000",
		"rediss://u:p%40ss@h:6380/2":  "h:6380",
		"redis://h?dial_timeout=2&read_timeout=500ms&write_timeout=1s&client_name=worker-1": "h:6379",
		"redis://h?connect_timeout=1s&": "h:6379",
		"redis://h?db=4":                "h:6379",
		"redis://h?wait=2":              "h:6379",
		"redis://h?waitaof=1,0":         "h:6379",
		"redis://h?waitaof=0,2&db=1":    "h:6379",
	} {
		s, err := redis.FromURL(url)
		if assert.NoError(t, err, url) {
			assert.Equal(t, name, s.String(), url)
			require.NoError(t, s.Close())
		}
	}
}

// get reads key from database db of node, outside the key server.
func get(t *testing.T, node *redistest.Node, db int, key string) any {
	t.Helper()
	conn, err := redigo.Dial("tcp", node.Addr(), redigo.DialDatabase(db))
	require.NoError(t, err)
	defer conn.Close()
	v, err := conn.Do("GET", key)
	require.NoError(t, err)
	return v
}

func TestDatabaseFromPathOrQuery(t *testing.T) {
	node := redistest.Start(t, 1).Nodes[0]
	for suffix, db := range map[string]int{"/2": 2, "?db=3": 3, "/4?db=4": 4, "": 0, "/0": 0} {
		s := fromURL(t, node.URL("")+suffix)
		key := "k" + suffix
		ok, err := s.Acquire(bg, key, "t", time.Minute)
		require.NoError(t, err, suffix)
		require.True(t, ok, suffix)
		for other := 0; other <= 4; other++ {
			if other == db {
				assert.Equal(t, []byte("t"), get(t, node, other, key), "%s: the key is in database %d", suffix, db)
			} else {
				assert.Nil(t, get(t, node, other, key), "%s: database %d", suffix, other)
			}
		}
	}
}

func TestDialDatabaseOptionReachesDatabasesTheURLRefuses(t *testing.T) {
	node := redistest.Start(t, 1).Nodes[0]
	s := fromURL(t, node.URL(""), redis.WithDialOptions(redigo.DialDatabase(7)))
	ok, err := s.Acquire(bg, "k", "t", time.Minute)
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, []byte("t"), get(t, node, 7, "k"))
	assert.Nil(t, get(t, node, 0, "k"))
}

func TestClientNameFromQuery(t *testing.T) {
	node := redistest.Start(t, 1).Nodes[0]
	s := fromURL(t, node.URL("")+"?client_name=nightly-worker")
	_, err := s.Acquire(bg, "k", "t", time.Minute) // opens a connection
	require.NoError(t, err)
	list, err := redigo.String(do(t, node, "CLIENT", "LIST"), nil)
	require.NoError(t, err)
	assert.Contains(t, list, "name=nightly-worker")
}

func TestReadTimeoutFromQueryBoundsCallsWithoutDeadline(t *testing.T) {
	node := redistest.Start(t, 1).Nodes[0]
	s := fromURL(t, node.URL("")+"?read_timeout=200ms")
	_, err := s.Acquire(bg, "warm", "t", time.Minute)
	require.NoError(t, err)
	node.Pause()
	defer node.Resume()
	start := time.Now()
	_, err = s.Acquire(context.Background(), "k", "t", time.Minute) // no deadline
	took := time.Since(start)
	require.Error(t, err)
	assert.True(t, strings.Contains(err.Error(), "timeout") || errors.Is(err, context.DeadlineExceeded), "%v", err)
	// Without the parameter the default of 10s would apply.
	assert.Less(t, took, 3*time.Second, "the call took %v", took)
}
