package goredis

import (
	"sort"
	"strings"

	goredis "github.com/redis/go-redis/v9" // as in goredis.go: redis is keyserver/redis there, and in doc links
)

// failoverAddr is the placeholder address go-redis gives a failover
// client, whose master is whatever the sentinels say it is.
const failoverAddr = "FailoverClient"

// String names the server after what its client's options say it talks
// to. Options hold no password outside their Password fields, so the name
// is safe to log.
func (t *transport) String() string {
	switch c := t.c.(type) {
	case *goredis.Client:
		switch addr := c.Options().Addr; addr {
		case failoverAddr:
			return "sentinel"
		case "":
		default:
			return addr
		}
	case *goredis.ClusterClient:
		if addrs := c.Options().Addrs; len(addrs) > 0 {
			return "cluster " + strings.Join(addrs, ",")
		}
		return "cluster"
	case *goredis.Ring:
		addrs := make([]string, 0, len(c.Options().Addrs))
		for _, a := range c.Options().Addrs {
			addrs = append(addrs, a)
		}
		sort.Strings(addrs)
		return "ring " + strings.Join(addrs, ",")
	}
	return "redis"
}
