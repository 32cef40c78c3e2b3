package main

import (
	"errors"

	"github.com/goredlock/goredlock/keyserver"
	"github.com/goredlock/goredlock/keyserver/redis"
	"github.com/goredlock/goredlock/redlock"
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

// readClient opens the servers of a command that only reads (leader,
// status) and a client over them whose warnings are kept quiet: the
// command's own output names every server that failed. done closes both.
func (t *tool) readClient(urls []string, opts ...redlock.ClientOption) (client *redlock.Client, done func(), err error) {
	srv, err := openServers(urls)
	if err != nil {
		return nil, nil, err
	}
	t.addrs = srv.addrs
	t.quiet.Store(true)
	client, err = redlock.New(srv.keyServers(), append([]redlock.ClientOption{redlock.WithLogger(t.logger())}, opts...)...)
	if err != nil {
		srv.close()
		return nil, nil, badf("%v", err)
	}
	return client, func() { client.Close(); srv.close() }, nil
}
