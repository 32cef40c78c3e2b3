package redis

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/goredlock/goredlock/internal/layout"
	"github.com/goredlock/goredlock/keyserver"
)

var _ keyserver.Inspector = (*Server)(nil)

// inspectScript reads a name's keys (lua/inspect.lua).
var inspectScript = newScript("inspect.lua")

// maxInspected is keyserver.MaxInspected, as the script takes it.
var maxInspected = strconv.Itoa(keyserver.MaxInspected)

// inspectKeys are the keys inspect.lua is given: the lock key with its line
// and fence counter, and the primitives' keys, beside which it finds theirs.
// They share a Cluster slot, as each carries the name's hash tag.
func inspectKeys(keys keyserver.NameKeys) []string {
	return []string{keys.Lock, layout.LineKey(keys.Lock), layout.FenceKey(keys.Lock),
		keys.Semaphore, keys.RW, keys.Election}
}

// Inspect reads what the Server's Redis holds under keys, in one script
// that writes nothing.
func (s *Server) Inspect(ctx context.Context, keys keyserver.NameKeys) (keyserver.NameStatus, error) {
	for _, k := range []string{keys.Lock, keys.Semaphore, keys.RW, keys.Election} {
		if err := keyserver.CheckKey(k); err != nil {
			return keyserver.NameStatus{}, err
		}
	}
	reply, err := s.evalAny(ctx, "inspect", inspectScript, inspectKeys(keys), maxInspected)
	if err != nil {
		return keyserver.NameStatus{}, err
	}
	st, err := decodeInspect(reply)
	if err != nil {
		return keyserver.NameStatus{}, s.fail("inspect", keys.Lock, err)
	}
	return st, nil
}

// decodeInspect reads inspect.lua's reply.
func decodeInspect(reply any) (keyserver.NameStatus, error) {
	var st keyserver.NameStatus
	bad := fmt.Errorf("unexpected reply %v to the inspect script", reply)
	r, ok := reply.([]any)
	if !ok || len(r) < 17 {
		return st, bad
	}
	var d decoder
	st.Lock = d.hold(r[0], r[1])
	st.Waiters, st.Fence = int(d.int(r[2])), uint64(d.int(r[3]))
	st.Permits, st.PermitWaiters = int(d.int(r[4])), int(d.int(r[5]))
	st.Writer = d.hold(r[6], r[7])
	st.WriterWaiting, st.RWWaiters = d.int(r[8]) == 1, int(d.int(r[9]))
	if ld := d.hold(r[10], r[12]); ld.Token != "" {
		st.Leader = keyserver.Leadership{Token: ld.Token, Value: d.text(r[11]), Left: ld.Left}
	}
	st.Term = uint64(d.int(r[13]))
	st.SlotsHeld, st.ReadersHeld = int(d.int(r[15])), int(d.int(r[16]))
	slots := 17 + 2*int(d.int(r[14]))
	if slots > len(r) || slots < 17 {
		return keyserver.NameStatus{}, bad
	}
	st.Slots, st.Readers = d.holds(r[17:slots]), d.holds(r[slots:])
	if d.bad {
		return keyserver.NameStatus{}, bad
	}
	return st, nil
}

// decoder reads the parts of a reply, noting whether any was not of the
// type expected.
type decoder struct{ bad bool }

func (d *decoder) int(v any) int64 {
	n, ok := v.(int64)
	d.bad = d.bad || !ok
	return n
}

func (d *decoder) text(v any) string {
	s, ok := text(v)
	d.bad = d.bad || !ok
	return s
}

func (d *decoder) ms(v any) time.Duration { return time.Duration(d.int(v)) * time.Millisecond }

// hold reads a token ("" for none) and its TTL.
func (d *decoder) hold(token, left any) keyserver.Hold {
	h := keyserver.Hold{Token: d.text(token)}
	if h.Token != "" {
		h.Left = d.ms(left)
	}
	return h
}

// holds reads pairs of a token and its TTL.
func (d *decoder) holds(v []any) []keyserver.Hold {
	if len(v)%2 != 0 {
		d.bad = true
		return nil
	}
	var hs []keyserver.Hold
	for i := 0; i < len(v); i += 2 {
		hs = append(hs, d.hold(v[i], v[i+1]))
	}
	return hs
}
