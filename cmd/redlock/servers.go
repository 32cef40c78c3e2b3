package main

import (
	"errors"

	"github.com/goredlock/goredlock/keyserver"
	"github.com/goredlock/goredlock/keyserver/redis"
)

// servers are the key servers of the URLs given, made without contacting
// any of them: FromURL checks a URL offline, so a bad one is a usage error
// before the first connection.
type servers struct {
	list  []*redis.Server
	addrs []string // host:port of each, as messages name them
}

// openServers returns a key server per URL. Its errors are FromURL's,
// which never quote a password.
func openServers(urls []string) (*servers, error) {
	s := &servers{}
	seen := map[string]bool{}
	for i, u := range urls {
		ks, err := redis.FromURL(u)
		if err != nil {
			s.close()
			return nil, badf("server %d of %d: %v", i+1, len(urls), err)
		}
		addr := ks.String()
		s.list, s.addrs = append(s.list, ks), append(s.addrs, addr)
		// One server counted twice would let a single crash take a
		// majority with it.
		if seen[addr] {
			s.close()
			return nil, badf("server %s is listed twice; Redlock needs independent servers", addr)
		}
		seen[addr] = true
	}
	return s, nil
}

// keyServers returns the servers as the redlock client takes them.
func (s *servers) keyServers() []keyserver.KeyServer {
	ks := make([]keyserver.KeyServer, len(s.list))
	for i, srv := range s.list {
		ks[i] = srv
	}
	return ks
}

// close closes every server's connections, once the client that used
// them has been closed.
func (s *servers) close() error {
	var errs []error
	for _, srv := range s.list {
		errs = append(errs, srv.Close())
	}
	return errors.Join(errs...)
}
