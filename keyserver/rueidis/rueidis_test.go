package rueidis_test

import (
	"context"
	"testing"

	"github.com/redis/rueidis"
	"go.uber.org/goleak"

	"github.com/goredlock/goredlock/internal/redistest"
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
		return rueidisks.FromOption(opt) // connects at once: a wrong password fails here
	}, transporttest.WithCluster(), transporttest.WithSentinel(), transporttest.WithCountedConnections())
}

// TestNew: a server over a caller's client works, and leaves the client
// open when it closes.
func TestNew(t *testing.T) {
	node := redistest.Start(t, 1).Nodes[0]
	client, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{node.Addr()}, DisableCache: true})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	transporttest.CallersClient(t, rueidisks.New(client), func(ctx context.Context) error {
		return client.Do(ctx, client.B().Ping().Build()).Error()
	})
}
