package chaos

import (
	"errors"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/goredlock/goredlock/fence/redisfence"
	"github.com/goredlock/goredlock/internal/redistest"
)

func TestStoreRefusesStaleFencedWritesOnly(t *testing.T) {
	data := redistest.Start(t, 1).Nodes[0]
	h := NewHistory()
	s, err := ListenStore(h, 0, data.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	c, err := dialStore(s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	ms := int64(time.Millisecond)
	for i, tc := range []struct {
		req    writeRequest
		accept bool
	}{
		{writeRequest{Client: 1, Token: "a", Name: "F", Fence: 5, Granted: 10 * ms}, true},
		{writeRequest{Client: 1, Token: "a", Name: "F", Fence: 5, Granted: 10 * ms}, true},  // the same holder again
		{writeRequest{Client: 3, Token: "b", Name: "F", Fence: 6, Granted: 30 * ms}, true},  // the next holder
		{writeRequest{Client: 1, Token: "a", Name: "F", Fence: 5, Granted: 10 * ms}, false}, // stopped past its validity: stale
		{writeRequest{Client: 0, Token: "c", Name: "U", Granted: 10 * ms}, true},
		{writeRequest{Client: 2, Token: "d", Name: "U", Granted: 30 * ms}, true},
		{writeRequest{Client: 0, Token: "c", Name: "U", Granted: 10 * ms}, true}, // stale, and nothing to tell it by
	} {
		ok, err := c.write(tc.req)
		if err != nil {
			t.Fatal(err)
		}
		if ok != tc.accept {
			t.Errorf("write %d: accepted %v, want %v", i, ok, tc.accept)
		}
	}
	// The data Redis has the next holder's write, and its fence, for F;
	// the last unfenced write for U, which no fence guards.
	for key, want := range map[string]string{
		dataKey("F"):                      "client 3, fence 6",
		redisfence.FenceKey(dataKey("F")): "6",
		dataKey("U"):                      "client 0, fence 0",
	} {
		if got, _ := redis.String(data.Do("GET", key)); got != want {
			t.Errorf("data Redis: %s = %q, want %q", key, got, want)
		}
	}
	if n, _ := redis.Int(data.Do("EXISTS", redisfence.FenceKey(dataKey("U")))); n != 0 {
		t.Error("an unfenced write stored a fence")
	}

	grants := []Grant{
		{Token: "a", Until: 20 * time.Millisecond},
		{Token: "b", Until: Never},
		{Token: "c", Until: 20 * time.Millisecond},
		{Token: "d", Until: Never},
	}
	r, vs := CheckWrites(s.Writes(), grants)
	want := WriteReport{Fenced: 4, Unfenced: 3, FencedStale: 1, Refused: 1, UnfencedStale: 1}
	r.Late = 0 // depends on how long the writes took
	if r != want || len(vs) != 0 {
		t.Errorf("report %+v with violations %v, want %+v and none", r, vs, want)
	}

	// A store that let a stale fenced write through is caught.
	writes := s.Writes()
	writes[3].Accepted, writes[3].Refused = true, false
	if r, vs := CheckWrites(writes, grants); r.FencedStaleAccepted != 1 || len(vs) != 1 || vs[0].Kind != StaleWrite {
		t.Errorf("a stale fenced write accepted: report %+v, violations %v", r, vs)
	}
	// So is one the data Redis failed on: it may have been taken.
	writes[3].Accepted, writes[3].Err = false, "i/o timeout"
	if r, vs := CheckWrites(writes, grants); r.FencedStaleAccepted != 1 || r.Errors != 1 || len(vs) != 1 {
		t.Errorf("a stale fenced write that failed: report %+v, violations %v", r, vs)
	}
}

// The fence is checked in the data Redis, not in the store's memory: a
// fence the store never saw, stored there by another writer, refuses a
// lower one.
func TestStoreChecksFencesInTheDataRedis(t *testing.T) {
	data := redistest.Start(t, 1).Nodes[0]
	data.MustDo("SET", redisfence.FenceKey(dataKey("F")), 100)
	h := NewHistory()
	s, err := ListenStore(h, 0, data.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if w := s.write(writeRequest{Client: 1, Token: "a", Name: "F", Fence: 50}); w.Accepted || !w.Refused || w.Stale {
		t.Errorf("fence 50 under a stored 100: %+v, want refused (and not stale by grant order)", w)
	}
	if w := s.write(writeRequest{Client: 1, Token: "a", Name: "F", Fence: 100}); !w.Accepted {
		t.Errorf("fence 100 under a stored 100: %+v, want accepted", w)
	}
	// A data Redis that is gone fails the write, which says so.
	data.Kill()
	w := s.write(writeRequest{Client: 1, Token: "a", Name: "F", Fence: 101})
	if w.Accepted || w.Refused || w.Err == "" {
		t.Errorf("a write with the data Redis gone: %+v, want an error", w)
	}
	c, err := dialStore(s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.write(writeRequest{Client: 1, Token: "a", Name: "F", Fence: 102}); err == nil || errors.Is(err, redisfence.ErrStale) {
		t.Errorf("a client's write with the data Redis gone: %v, want the store's error", err)
	}
}
