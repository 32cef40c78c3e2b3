package valkey_test

import (
	"context"
	"net/url"
	"testing"

	"github.com/valkey-io/valkey-go"
	"go.uber.org/goleak"

	"github.com/goredlock/goredlock/internal/redistest"
	"github.com/goredlock/goredlock/keyserver/redis"
	"github.com/goredlock/goredlock/keyserver/redis/transporttest"
	valkeyks "github.com/goredlock/goredlock/keyserver/valkey"
)

// TestTransport runs the Redis behaviour suite over valkey-go, against
// redis-server: a single node, a Cluster and a Sentinel-managed master.
// The clients are made from URLs, as valkey.ParseURL reads them.
func TestTransport(t *testing.T) {
	transporttest.Run(t, func(t *testing.T, target transporttest.Target) (*redis.Server, error) {
		u := url.URL{Scheme: "redis", Host: target.Addr, User: url.UserPassword(target.Username, target.Password)}
		if target.Sentinel != "" {
			u.RawQuery = url.Values{"master_set": {target.Sentinel}}.Encode()
		}
		opt, err := valkey.ParseURL(u.String())
		if err != nil {
			t.Fatal(err)
		}
		opt.TLSConfig, opt.DisableCache = target.TLS, true
		return valkeyks.FromOption(opt) // connects at once: a wrong password fails here
	}, transporttest.WithCluster(), transporttest.WithSentinel(), transporttest.WithCountedConnections())
}

// TestNew: a server over a caller's client works, and leaves the client
// open when it closes.
func TestNew(t *testing.T) {
	node := redistest.Start(t, 1).Nodes[0]
	client, err := valkey.NewClient(valkey.ClientOption{InitAddress: []string{node.Addr()}, DisableCache: true})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	transporttest.CallersClient(t, valkeyks.New(client), func(ctx context.Context) error {
		return client.Do(ctx, client.B().Ping().Build()).Error()
	})
}

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
