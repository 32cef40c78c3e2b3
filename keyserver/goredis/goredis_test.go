package goredis_test

import (
	"testing"

	goredis "github.com/redis/go-redis/v9"
	"go.uber.org/goleak"

	goredisks "github.com/goredlock/goredlock/keyserver/goredis"
	"github.com/goredlock/goredlock/keyserver/redis"
	"github.com/goredlock/goredlock/keyserver/redis/transporttest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestTransport runs the Redis behaviour suite over go-redis: a single
// node, a Cluster and a Sentinel-managed master.
func TestTransport(t *testing.T) {
	transporttest.Run(t, func(t *testing.T, target transporttest.Target) (*redis.Server, error) {
		var client goredis.UniversalClient
		switch {
		case target.Cluster:
			client = goredis.NewClusterClient(&goredis.ClusterOptions{Addrs: []string{target.Addr},
				Username: target.Username, Password: target.Password, TLSConfig: target.TLS})
		case target.Sentinel != "":
			client = goredis.NewFailoverClient(&goredis.FailoverOptions{MasterName: target.Sentinel, SentinelAddrs: []string{target.Addr},
				Username: target.Username, Password: target.Password, TLSConfig: target.TLS})
		default:
			client = goredis.NewClient(&goredis.Options{Addr: target.Addr,
				Username: target.Username, Password: target.Password, TLSConfig: target.TLS})
		}
		t.Cleanup(func() { client.Close() })
		return goredisks.New(client), nil
	}, transporttest.WithCluster(), transporttest.WithSentinel(), transporttest.WithCountedConnections())
}

func TestDefaultNames(t *testing.T) {
	single := goredis.NewClient(&goredis.Options{Addr: "10.0.0.1:6379", Password: "hunter2"})
	failover := goredis.NewFailoverClient(&goredis.FailoverOptions{MasterName: "m", SentinelAddrs: []string{"10.0.0.9:26379"}})
	cluster := goredis.NewClusterClient(&goredis.ClusterOptions{Addrs: []string{"10.0.0.1:7000", "10.0.0.2:7000"}})
	ring := goredis.NewRing(&goredis.RingOptions{Addrs: map[string]string{"b": "10.0.0.2:6379", "a": "10.0.0.1:6379"}})
	for want, c := range map[string]goredis.UniversalClient{
		"10.0.0.1:6379":                       single,
		"sentinel":                            failover,
		"cluster 10.0.0.1:7000,10.0.0.2:7000": cluster,
		"ring 10.0.0.1:6379,10.0.0.2:6379":    ring,
		"redis":                               wrapped{single},
	} {
		s := goredisks.New(c)
		if got := s.String(); got != want {
			t.Errorf("name = %q, want %q", got, want)
		}
		s.Close()
	}
	for _, c := range []goredis.UniversalClient{single, failover, cluster, ring} {
		c.Close()
	}
}

// wrapped is a client of a type goredis does not know.
type wrapped struct{ goredis.UniversalClient }
