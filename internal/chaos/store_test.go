package chaos

import (
	"testing"
	"time"
)

func TestStoreRejectsStaleFencedWritesOnly(t *testing.T) {
	h := NewHistory()
	s, err := ListenStore(h, 0)
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

	grants := []Grant{
		{Token: "a", Until: 20 * time.Millisecond},
		{Token: "b", Until: Never},
		{Token: "c", Until: 20 * time.Millisecond},
		{Token: "d", Until: Never},
	}
	r, vs := CheckWrites(s.Writes(), grants)
	want := WriteReport{Fenced: 4, Unfenced: 3, FencedStale: 1, UnfencedStale: 1}
	r.Late = 0 // depends on how long the writes took
	if r != want || len(vs) != 0 {
		t.Errorf("report %+v with violations %v, want %+v and none", r, vs, want)
	}

	// A store that let a stale fenced write through is caught.
	writes := s.Writes()
	writes[3].Accepted = true
	if r, vs := CheckWrites(writes, grants); r.FencedStaleAccepted != 1 || len(vs) != 1 || vs[0].Kind != StaleWrite {
		t.Errorf("a stale fenced write accepted: report %+v, violations %v", r, vs)
	}
}
