package main

import "fmt"

// A case with several clients stands for several processes that lock the
// same names: each client is the peer opened on its own, so that clients
// share the nodes and nothing else. goredlock's is a redlock.Client over
// redis.FromURL servers of its own (its own connections, its own waiting
// state); redsync's an instance over redigo pools of its own; rueidislock's
// a Locker with rueidis clients of its own; bsm/redislock's and the
// floor's likewise. Goroutines of one client contend as calls of one
// process; goroutines of different clients as processes do, which is
// what users with several replicas see and what one client cannot show.

// clientOf is the client goroutine g is dealt to, round-robin over n
// clients: every client gets the same share when n divides the goroutines,
// and a client never sits idle while another has two goroutines more.
func clientOf(g, n int) int { return g % n }

// openClients opens n independent lockers of p. On error it closes the ones
// it opened.
func openClients(p peer, n int, addrs []string, s settings) ([]locker, error) {
	var ls []locker
	for i := 0; i < n; i++ {
		l, err := p.open(addrs, s)
		if err != nil {
			closeClients(ls) //nolint:errcheck // reporting the first error
			if n > 1 {
				err = fmt.Errorf("client %d of %d: %w", i+1, n, err)
			}
			return nil, err
		}
		ls = append(ls, l)
	}
	return ls, nil
}

// closeClients closes every locker and returns the first error.
func closeClients(ls []locker) error {
	var first error
	for _, l := range ls {
		if err := l.close(); err != nil && first == nil {
			first = err
		}
	}
	return first
}
