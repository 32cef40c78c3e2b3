package check

import (
	"errors"
	"testing"
	"time"

	"github.com/goredlock/goredlock/keyserver"
)

// TestZeroTTL: a call that stores something refuses a TTL of 0, which
// the call that stores nothing never looks at.
func TestZeroTTL(t *testing.T) {
	keys := []string{"a", "b"}
	permit := keyserver.HoldSpec{Kind: keyserver.PermitHold, Key: "s", Token: "t", Permits: 2, Slot: 1}
	for what, err := range map[string]error{
		"KeysTTL": KeysTTL(keys, "t", 0),
		"HoldTTL": HoldTTL(permit, 0),
	} {
		if !errors.Is(err, keyserver.ErrInvalidArgument) {
			t.Errorf("%s with a zero TTL = %v; want ErrInvalidArgument", what, err)
		}
	}
	for what, err := range map[string]error{
		"Keys":    Keys(keys, "t"),
		"Hold":    Hold(permit),
		"KeysTTL": KeysTTL(keys, "t", time.Millisecond),
		"HoldTTL": HoldTTL(permit, time.Millisecond),
	} {
		if err != nil {
			t.Errorf("%s = %v; want nil", what, err)
		}
	}
}

func TestHold(t *testing.T) {
	for _, h := range []keyserver.HoldSpec{
		{Kind: 0, Key: "k", Token: "t"},
		{Kind: keyserver.LeaderHold + 1, Key: "k", Token: "t"},
		{Kind: keyserver.PermitHold, Key: "k", Token: "t", Permits: 2, Slot: 2},
		{Kind: keyserver.PermitHold, Key: "k", Token: "t", Permits: 0},
		{Kind: keyserver.ReadHold, Key: "", Token: "t"},
		{Kind: keyserver.ReadHold, Key: "k", Token: ""},
	} {
		if err := Hold(h); !errors.Is(err, keyserver.ErrInvalidArgument) {
			t.Errorf("Hold(%+v) = %v; want ErrInvalidArgument", h, err)
		}
	}
	leader := keyserver.HoldSpec{Kind: keyserver.LeaderHold, Key: "e", Token: "t"}
	if err := HoldTTL(leader, time.Second); !errors.Is(err, keyserver.ErrInvalidArgument) {
		t.Errorf("HoldTTL of a leadership with no value = %v; want ErrInvalidArgument", err)
	}
	if err := Hold(leader); err != nil {
		t.Errorf("Hold of a leadership with no value (its release) = %v; want nil", err)
	}
}
