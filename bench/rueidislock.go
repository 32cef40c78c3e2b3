package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/rueidis"
	"github.com/redis/rueidis/rueidislock"
)

func rueidislockPeer() peer {
	return peer{
		name: "rueidislock",
		about: "rueidislock with KeyMajority N/2+1 (so N keys), KeyValidity -ttl, other defaults; " +
			"its ClientBuilder hook sends key i of every lock to node i, so the majority is one of independent masters. " +
			"Waiters wake on server-pushed invalidations; the locker auto-pipelines.",
		skip: func(n int, _ workload) string {
			if n%2 == 0 {
				return "needs an odd number of nodes (2k-1 keys)"
			}
			return ""
		},
		open: func(addrs []string, s settings) (locker, error) {
			const prefix = "rueidislock"
			l, err := rueidislock.NewLocker(rueidislock.LockerOption{
				ClientOption: rueidis.ClientOption{InitAddress: addrs[:1]},
				KeyPrefix:    prefix,
				KeyMajority:  int32(len(addrs)/2 + 1),
				KeyValidity:  s.ttl,
				ClientBuilder: func(o rueidis.ClientOption) (rueidis.Client, error) {
					return newShardedClient(addrs, prefix, o)
				},
			})
			if err != nil {
				return nil, fmt.Errorf("rueidislock: %w", err)
			}
			return &rueidisLocker{l: l}, nil
		},
	}
}

type rueidisLocker struct{ l rueidislock.Locker }

func (r *rueidisLocker) lock(ctx context.Context, name string) (func(context.Context) error, error) {
	_, cancel, err := r.l.WithContext(ctx, name)
	if err != nil {
		return nil, err
	}
	// cancel releases every key and returns when they are released.
	return func(context.Context) error { cancel(); return nil }, nil
}

func (r *rueidisLocker) close() error { r.l.Close(); return nil }

// shardedClient routes rueidislock's keys to independent nodes: the i-th
// key of a lock ("<prefix>:<i>:<name>") goes to node i. Given one address,
// rueidislock would keep all of a lock's keys on one deployment, and given
// several standalone addresses rueidis refuses them (it would take them
// for a cluster). Commands without a lock key (rueidislock sends none)
// and the calls not overridden here go to the first node.
type shardedClient struct {
	rueidis.Client // the first node
	nodes          []rueidis.Client
	prefix         string
}

// newShardedClient makes one client per address with the locker's options
// (its invalidation callback included, so that every node wakes waiters).
func newShardedClient(addrs []string, prefix string, o rueidis.ClientOption) (*shardedClient, error) {
	s := &shardedClient{prefix: prefix + ":"}
	for _, a := range addrs {
		o := o
		o.InitAddress = []string{a}
		c, err := rueidis.NewClient(o)
		if err != nil {
			s.Close()
			return nil, err
		}
		s.nodes = append(s.nodes, c)
	}
	s.Client = s.nodes[0]
	return s, nil
}

// node picks the node for a command by the first argument that is a lock
// key.
func (s *shardedClient) node(args []string) rueidis.Client {
	for _, a := range args {
		rest, ok := strings.CutPrefix(a, s.prefix)
		if !ok {
			continue
		}
		idx, _, ok := strings.Cut(rest, ":")
		if i, err := strconv.Atoi(idx); ok && err == nil && i >= 0 && i < len(s.nodes) {
			return s.nodes[i]
		}
	}
	return s.nodes[0]
}

func (s *shardedClient) Do(ctx context.Context, cmd rueidis.Completed) rueidis.RedisResult {
	return s.node(cmd.Commands()).Do(ctx, cmd)
}

// DoMulti sends each command on its own: they may belong to different nodes.
func (s *shardedClient) DoMulti(ctx context.Context, multi ...rueidis.Completed) []rueidis.RedisResult {
	out := make([]rueidis.RedisResult, len(multi))
	for i, cmd := range multi {
		out[i] = s.Do(ctx, cmd)
	}
	return out
}

func (s *shardedClient) DoCache(ctx context.Context, cmd rueidis.Cacheable, ttl time.Duration) rueidis.RedisResult {
	return s.node(cmd.Commands()).DoCache(ctx, cmd, ttl)
}

func (s *shardedClient) DoMultiCache(ctx context.Context, multi ...rueidis.CacheableTTL) []rueidis.RedisResult {
	out := make([]rueidis.RedisResult, len(multi))
	for i, m := range multi {
		out[i] = s.DoCache(ctx, m.Cmd, m.TTL)
	}
	return out
}

func (s *shardedClient) Nodes() map[string]rueidis.Client {
	all := map[string]rueidis.Client{}
	for _, c := range s.nodes {
		for addr, n := range c.Nodes() {
			all[addr] = n
		}
	}
	return all
}

func (s *shardedClient) Close() {
	for _, c := range s.nodes {
		c.Close()
	}
}
