package rueidis_test

import (
	"testing"

	"github.com/redis/rueidis"
	"go.uber.org/goleak"

	"github.com/goredlock/goredlock/keyserver/redis"
	"github.com/goredlock/goredlock/keyserver/redis/transporttest"
	rueidisks "github.com/goredlock/goredlock/keyserver/rueidis"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestTransport runs the Redis behaviour suite over rueidis: a single
// node, a Cluster and a Sentinel-managed master.
func TestTransport(t *testing.T) {
	transporttest.Run(t, func(t *testing.T, target transporttest.Target) (*redis.Server, error) {
		opt := rueidis.ClientOption{InitAddress: []string{target.Addr}, Username: target.Username, Password: target.Password,
			TLSConfig: target.TLS, DisableCache: true}
		if target.Sentinel != "" {
			opt.Sentinel.MasterSet = target.Sentinel
		}
		client, err := rueidis.NewClient(opt) // connects at once: a wrong password fails here
		if err != nil {
			return nil, err
		}
		t.Cleanup(client.Close)
		return rueidisks.New(client), nil
	}, transporttest.WithCluster(), transporttest.WithSentinel())
}
