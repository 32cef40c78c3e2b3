package rueidis

import (
	"sort"
	"strings"

	"github.com/redis/rueidis"
)

// defaultName names a server after the nodes its client knows. Node
// addresses carry no credentials, so the name is safe to log.
func defaultName(client rueidis.Client) string {
	nodes := client.Nodes()
	addrs := make([]string, 0, len(nodes))
	for addr := range nodes {
		addrs = append(addrs, addr)
	}
	if len(addrs) == 0 {
		return "redis"
	}
	sort.Strings(addrs)
	return strings.Join(addrs, ",")
}
