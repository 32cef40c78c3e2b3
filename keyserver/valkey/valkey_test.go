package valkey_test

import (
	"net/url"
	"testing"

	"github.com/valkey-io/valkey-go"
	"go.uber.org/goleak"

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
		client, err := valkey.NewClient(opt) // connects at once: a wrong password fails here
		if err != nil {
			return nil, err
		}
		t.Cleanup(client.Close)
		return valkeyks.New(client), nil
	}, transporttest.WithCluster(), transporttest.WithSentinel())
}

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
