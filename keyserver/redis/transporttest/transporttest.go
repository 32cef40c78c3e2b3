// Package transporttest is the behaviour suite every [redis.Transport] of
// the Redis key server (keyserver/redis) passes, on real redis-server
// processes it starts itself: the keyservertest conformance suite, the
// waiting line across processes, the SET NX fast path, the failures that
// are permanent and those that are not, a restarted, paused or killed
// node, a user whose ACL denies Pub/Sub, TLS, and Redis Cluster and
// Sentinel for the clients that speak them, and the redlock client over
// three nodes.
//
// A transport's test gives [Run] a function that makes a key server over
// the transport to a [Target]:
//
//	func TestTransport(t *testing.T) {
//		transporttest.Run(t, func(t *testing.T, target transporttest.Target) (*redis.Server, error) {
//			client := myclient.New(target.Addr, target.Password, target.TLS)
//			t.Cleanup(func() { client.Close() })
//			return redis.NewServer(mytransport.New(client)), nil
//		})
//	}
//
// Run closes each server when its test ends (before the cleanups the
// function registered). The nodes run redis-server from PATH, or the
// server binary the environment variable GOREDLOCK_REDIS_SERVER names (a
// Redis of another version, or valkey-server: make test-engines runs the
// suite once per engine so). Without that server the suite skips, unless
// the CI environment variable is set: it then fails.
package transporttest

import (
	"crypto/tls"
	"testing"
	"time"

	"github.com/goredlock/goredlock/internal/redistest"
	"github.com/goredlock/goredlock/internal/startcall/startcalltest"
	"github.com/goredlock/goredlock/keyserver"
	"github.com/goredlock/goredlock/keyserver/keyservertest"
	"github.com/goredlock/goredlock/keyserver/redis"
)

// Target says how to reach the Redis a server is made for.
type Target struct {
	// Addr is host:port: of the node, of a node of the Cluster, or of the
	// sentinel when Sentinel names a master.
	Addr string
	// Username and Password authenticate, when not empty.
	Username, Password string
	// TLS is the client configuration for a node that speaks TLS only;
	// nil for plain TCP.
	TLS *tls.Config
	// Cluster says Addr is a node of a Redis Cluster.
	Cluster bool
	// Sentinel is the master name a sentinel at Addr watches; "" for a
	// direct connection.
	Sentinel string
}

// NewServer makes a key server over the transport under test to target.
// It returns an error only when the client refuses to be made, as a
// client that connects at once does for a wrong password or a certificate
// it does not trust; the suite then takes that refusal for the one it
// expects of the first call, and fails where it expects none.
type NewServer func(t *testing.T, target Target) (*redis.Server, error)

// Option adds the deployments a client supports to the suite.
type Option func(*suite)

// WithCluster runs the conformance suite on a Redis Cluster too.
func WithCluster() Option { return func(s *suite) { s.cluster = true } }

// WithSentinel runs a failover through a sentinel too.
func WithSentinel() Option { return func(s *suite) { s.sentinel = true } }

// WithCountedConnections says the transport counts its connections to a
// single node (redis.ConnectionCounter): the suite then checks that a
// server asked its incarnation again, with no new connection in between,
// reads no INFO.
func WithCountedConnections() Option { return func(s *suite) { s.counted = true } }

type suite struct {
	newServer         NewServer
	cluster, sentinel bool
	counted           bool
}

// Run runs the suite as subtests of t.
func Run(t *testing.T, newServer NewServer, opts ...Option) {
	s := &suite{newServer: newServer}
	for _, o := range opts {
		o(s)
	}
	tests := []struct {
		name string
		fn   func(*testing.T)
	}{
		{"Conformance", s.conformance},
		{"FastPath", s.fastPath},
		{"CommandCounts", s.commandCounts},
		{"SetCommandCounts", s.setCommandCounts},
		{"Contention", s.contention},
		{"PrimitiveCommandCounts", s.primitiveCommandCounts},
		{"ReleaseWakesOneWatcher", s.releaseWakesOneWatcher},
		{"TurnAcrossServers", s.turnAcrossServers},
		{"TurnBeforeWatch", s.turnBeforeWatch},
		{"TurnAfterAFiredWatch", s.turnAfterAFiredWatch},
		{"OneSubscriberConnection", s.oneSubscriberConnection},
		{"PermanentErrors", s.permanentErrors},
		{"WrongPassword", s.wrongPassword},
		{"TLS", s.tls},
		{"Restart", s.restart},
		{"Incarnation", s.incarnation},
		{"Pause", s.pause},
		{"KilledConnections", s.killedConnections},
		{"ACLWithoutPubSub", s.aclWithoutPubSub},
		{"FIPSDigests", s.scriptsByDigest},
		{"RedlockOverThreeNodes", s.redlockOverThreeNodes},
	}
	if s.cluster {
		tests = append(tests, struct {
			name string
			fn   func(*testing.T)
		}{"Cluster", s.clusterConformance})
	}
	if s.sentinel {
		tests = append(tests, struct {
			name string
			fn   func(*testing.T)
		}{"SentinelFailover", s.sentinelFailover})
	}
	for _, tc := range tests {
		t.Run(tc.name, tc.fn)
	}
}

// server makes a server to target and closes it when t ends.
func (s *suite) server(t *testing.T, target Target) *redis.Server {
	t.Helper()
	srv, err := s.newServer(t, target)
	if err != nil {
		t.Fatalf("making a server to %s: %v", target.Addr, err)
	}
	t.Cleanup(func() {
		if err := srv.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return srv
}

// single starts one redis-server and makes a server to it.
func (s *suite) single(t *testing.T) (*redistest.Node, *redis.Server) {
	n := node(t)
	return n, s.server(t, Target{Addr: n.Addr()})
}

// node starts one redis-server.
func node(t *testing.T, opts ...redistest.Option) *redistest.Node {
	return redistest.Start(t, 1, opts...).Nodes[0]
}

// conformance runs keyservertest, and the checks of the started calls
// (this module's own protocol, not the public suite's), on one node.
func (s *suite) conformance(t *testing.T) {
	n := node(t)
	newServer := func(t *testing.T) keyserver.KeyServer { return s.server(t, Target{Addr: n.Addr()}) }
	keyservertest.Run(t, newServer)
	startcalltest.Run(t, newServer)
}

// clusterConformance is conformance on a Redis Cluster.
func (s *suite) clusterConformance(t *testing.T) {
	n := node(t, redistest.WithClusterMode())
	newServer := func(t *testing.T) keyserver.KeyServer { return s.server(t, Target{Addr: n.Addr(), Cluster: true}) }
	keyservertest.Run(t, newServer)
	startcalltest.Run(t, newServer)
}

var bg = contextBackground()

const ttl = 10 * time.Second
