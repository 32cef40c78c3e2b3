package redis

import (
	"context"
	"time"

	"github.com/goredlock/goredlock/internal/check"
	"github.com/goredlock/goredlock/internal/layout"
	"github.com/goredlock/goredlock/keyserver"
)

// The lines of a set's keys (keyserver.SetLocker's AcquireAllInLine and
// LeaveLines): a set waits in the same lines as a lock, so that both are
// served in rank order.
var (
	setInLineScript = newScript("acquire_all_in_line.lua") // AcquireAllInLine
	leaveAllScript  = newScript("leave_lines.lua")         // LeaveLines, and LeaveLine (a set of one key)
)

// AcquireAllInLine is AcquireAll for a call that waits its turn in the
// keys' lines (see keyserver.SetLocker). A set that no waiter of this
// process watches is tried with AcquireAll's script first, as AcquireInLine
// tries a SET NX first.
func (s *Server) AcquireAllInLine(ctx context.Context, keys []string, token string, ttl time.Duration) (bool, keyserver.Holder, error) {
	if err := check.KeysTTL(keys, token, ttl); err != nil {
		return false, keyserver.Holder{}, err
	}
	if layout.RankOf(token) == "" { // nobody to put in line
		return s.AcquireAll(ctx, keys, token, ttl)
	}
	if !s.sub.contended(keys...) {
		if ok, h, err := s.AcquireAll(ctx, keys, token, ttl); err != nil || ok {
			return ok, h, err
		}
	}
	return s.acquireAllInLineTaken(ctx, keys, token, ttl)
}

// acquireAllInLineTaken is AcquireAllInLine past AcquireAll's script (or
// without it): the script that takes, keeps or gives up the caller's
// places in the keys' lines.
func (s *Server) acquireAllInLineTaken(ctx context.Context, keys []string, token string, ttl time.Duration) (bool, keyserver.Holder, error) {
	p := keyserver.PromiseOf(token)
	var cn *subConn
	for _, k := range keys {
		cn = s.sub.joining(k, p) // before the places are taken: see subscriber.joinedOn
	}
	ok, h, err := decodeHolder(s.evalAny(ctx, "acquire", setInLineScript, withLines(keys, nil),
		token, ms(ttl), p, s.sub.turnMember(p), lineTTL, claimTTL))
	if err == nil && !ok {
		for _, k := range keys {
			s.sub.joinedOn(cn, k, p)
		}
	}
	return ok, h, crossSlot(err)
}

// LeaveLines takes the waiter ranked as token out of the lines of every
// key, and passes each key promised to it on.
func (s *Server) LeaveLines(ctx context.Context, keys []string, token string) error {
	if err := check.Keys(keys, token); err != nil {
		return err
	}
	p := keyserver.PromiseOf(token)
	if p == "" {
		return nil
	}
	_, err := s.eval(ctx, "leave line", leaveAllScript, withLines(keys, nil), s.sub.turnMember(p), p, claimTTL)
	return crossSlot(err)
}

// withLines returns the keys each followed by its line: lines[i] where
// given, else layout.LineKey(keys[i]).
func withLines(keys, lines []string) []string {
	k := make([]string, 0, 2*len(keys))
	for i, key := range keys {
		if i < len(lines) {
			k = append(k, key, lines[i])
		} else {
			k = append(k, key, layout.LineKey(key))
		}
	}
	return k
}
