package valkey_test

import (
	"testing"

	"github.com/valkey-io/valkey-go"
	"go.uber.org/goleak"

	"github.com/goredlock/goredlock/keyserver/redis"
	"github.com/goredlock/goredlock/keyserver/redis/transporttest"
	valkeyks "github.com/goredlock/goredlock/keyserver/valkey"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestTransport runs the Redis behaviour suite over valkey-go, against
// redis-server: a single node, a Cluster and a Sentinel-managed master.
func TestTransport(t *testing.T) {
	transporttest.Run(t, func(t *testing.T, target transporttest.Target) (*redis.Server, error) {
		opt := valkey.ClientOption{
			InitAddress:  []string{target.Addr},
			Username:     target.Username,
			Password:     target.Password,
			TLSConfig:    target.TLS,
			DisableCache: true,
		}
		opt.Sentinel.MasterSet = target.Sentinel
		client, err := valkey.NewClient(opt) // connects at once: a wrong password fails here
		if err != nil {
			return nil, err
		}
		t.Cleanup(client.Close)
		return valkeyks.New(client), nil
	}, transporttest.WithCluster(), transporttest.WithSentinel())
}
