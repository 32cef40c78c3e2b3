package redis

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/goredlock/goredlock/internal/layout"
	"github.com/goredlock/goredlock/keyserver"
)

// The scripts of a set of lock keys (keyserver.SetLocker).
var (
	setAllScript     = newScript("acquire_all.lua")
	releaseAllScript = newScript("release_all.lua")
)

// AcquireAll stores token under every key for ttl if no key is held by
// another value, or none of them (see keyserver.SetLocker). On a Redis
// Cluster the keys must share a hash slot.
func (s *Server) AcquireAll(ctx context.Context, keys []string, token string, ttl time.Duration) (bool, keyserver.Holder, error) {
	if err := keyserver.CheckKeys(keys, token, ttl); err != nil {
		return false, keyserver.Holder{}, err
	}
	ok, h, err := decodeHolder(s.evalAny(ctx, "acquire", setAllScript, keys, token, ms(ttl), promise(token)))
	return ok, h, crossSlot(err)
}

// crossSlot says what a Cluster's CROSSSLOT refusal of a set means.
func crossSlot(err error) error {
	if err != nil && strings.Contains(err.Error(), "CROSSSLOT") {
		return fmt.Errorf("%w (the names of a set must share a hash slot: give them a common hash tag, such as {orders}:a and {orders}:b)", err)
	}
	return err
}

// ExtendAll renews every key of the set, and stores again those a
// restart lost, or none of them when another value holds one.
func (s *Server) ExtendAll(ctx context.Context, keys []string, token string, ttl time.Duration) (bool, error) {
	if err := keyserver.CheckKeys(keys, token, ttl); err != nil {
		return false, err
	}
	ok, _, err := decodeHolder(s.evalAny(ctx, "extend", setAllScript, keys, token, ms(ttl), promise(token)))
	return ok, crossSlot(err)
}

// ReleaseAll lets go of every key that holds token, each passing to the
// first waiter in its line, and reports whether every key did.
func (s *Server) ReleaseAll(ctx context.Context, keys []string, token string) (bool, error) {
	if err := keyserver.CheckKeys(keys, token, 0); err != nil {
		return false, err
	}
	withLines := make([]string, 0, 2*len(keys))
	for _, k := range keys {
		withLines = append(withLines, k, layout.LineKey(k))
	}
	n, err := s.eval(ctx, "release", releaseAllScript, withLines, token, claimTTL, promiseLenArg)
	return err == nil && n == int64(len(keys)), crossSlot(err)
}
