package redis

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/goredlock/goredlock/internal/check"
	"github.com/goredlock/goredlock/internal/layout"
	"github.com/goredlock/goredlock/internal/startcall"
	"github.com/goredlock/goredlock/keyserver"
)

// The scripts of a set of lock keys (keyserver.SetLocker).
var (
	setAllScript     = newScript("acquire_all.lua") // and AcquireOrHolder's, a set of one key
	releaseAllScript = newScript("release_all.lua")
)

// AcquireAll stores token under every key for ttl if no key is held by
// another value, or none of them (see keyserver.SetLocker). On a Redis
// Cluster the keys must share a hash slot.
func (s *Server) AcquireAll(ctx context.Context, keys []string, token string, ttl time.Duration) (bool, keyserver.Holder, error) {
	if err := check.KeysTTL(keys, token, ttl); err != nil {
		return false, keyserver.Holder{}, err
	}
	_, keys, args := allWords(false, keys, token, ttl)
	ok, h, err := decodeHolder(s.evalAny(ctx, "acquire", setAllScript, keys, args...))
	return ok, h, crossSlot(err)
}

// allWords returns the script of a set's call, and its keys and
// arguments: ReleaseAll's when release, else AcquireAll's and ExtendAll's.
func allWords(release bool, keys []string, token string, ttl time.Duration) (sc *script, k, args []string) {
	if !release {
		return setAllScript, keys, []string{token, ms(ttl), promise(token)}
	}
	return releaseAllScript, withLines(keys, nil), []string{token, claimTTL}
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
	if err := check.KeysTTL(keys, token, ttl); err != nil {
		return false, err
	}
	_, keys, args := allWords(false, keys, token, ttl)
	ok, _, err := decodeHolder(s.evalAny(ctx, "extend", setAllScript, keys, args...))
	return ok, crossSlot(err)
}

// ReleaseAll lets go of every key that holds token, each passing to the
// first waiter in its line, and reports whether every key did.
func (s *Server) ReleaseAll(ctx context.Context, keys []string, token string) (bool, error) {
	if err := check.Keys(keys, token); err != nil {
		return false, err
	}
	_, withLines, args := allWords(true, keys, token, 0)
	n, err := s.eval(ctx, "release", releaseAllScript, withLines, args...)
	return err == nil && n == int64(len(keys)), crossSlot(err)
}

// firstOfSet is started.first for a set's call: its script by digest,
// the words written into st.buf (StartCommand copies them).
func (st *started) firstOfSet() (cmd, keys, args []string, ok bool) {
	s, c := st.s, st.c
	release := c.Op == startcall.CallRelease
	sc, invalid := releaseAllScript, error(nil)
	if release {
		invalid = check.Keys(c.Keys, c.Token)
	} else {
		sc, invalid = setAllScript, check.KeysTTL(c.Keys, c.Token, c.TTL)
	}
	d := s.digests[sc.id].Load()
	if d == nil || *d == "" || invalid != nil ||
		c.Op == startcall.CallAcquireInLine && layout.RankOf(c.Token) != "" && s.sub.contended(c.Keys...) {
		return nil, nil, nil, false // a contended set waiting in line: its script, blocking
	}
	st.step = stepSet
	n := len(c.Keys)
	if release {
		n *= 2
	}
	w := append(st.buf[:0], "EVALSHA", *d, strconv.Itoa(n))
	if release {
		w = append(w, withLines(c.Keys, c.Lines)...)
	} else {
		w = append(w, c.Keys...)
	}
	if release {
		w = append(w, c.Token, claimTTL)
	} else {
		w = append(w, c.Token, ms(c.TTL), promise(c.Token))
	}
	st.buf = w
	return w[:3:3], w[3 : 3+n : 3+n], w[3+n:], true
}

// inLineRefused reports whether reply, to a set's started call, refused
// a set that waits in line: AcquireAll's script does not take its places
// in line, so setInLineScript goes on from there (see AcquireAllInLine).
func (st *started) inLineRefused(reply any) bool {
	c := st.c
	return c.Op == startcall.CallAcquireInLine && reply != int64(1) && layout.RankOf(c.Token) != ""
}

// setInLineTaken is the rest of a set's started call that inLineRefused.
func (st *started) setInLineTaken(ctx context.Context) (a startcall.Answer) {
	c := st.c
	a.OK, a.Holder, a.Err = st.s.acquireAllInLineTaken(ctx, c.Keys, c.Token, c.TTL)
	return a
}

// setAnswer decodes the reply to a set's started call as the blocking
// method would.
func (st *started) setAnswer(reply any) (a startcall.Answer) {
	c := st.c
	if c.Op == startcall.CallRelease {
		var n int64
		n, a.Err = st.s.integer("release", c.Key, reply)
		a.OK = a.Err == nil && n == int64(len(c.Keys))
		return a
	}
	a.OK, a.Holder, a.Err = decodeHolder(reply, nil)
	if c.Op == startcall.CallExtend {
		a.Holder = keyserver.Holder{}
	}
	if a.Err != nil {
		a.Err = st.s.fail(st.op(), c.Key, a.Err)
	}
	return a
}
