package memory_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/goredlock/goredlock/internal/layout"
	"github.com/goredlock/goredlock/keyserver"
	"github.com/goredlock/goredlock/keyserver/memory"
)

// TestInspectCountsEverySlot: Inspect counts every held slot of a large
// semaphore (SlotsHeld), wherever the slots are, and lists the lowest
// keyserver.MaxInspected of them; readers alike.
func TestInspectCountsEverySlot(t *testing.T) {
	s := memory.New()
	defer s.Close()
	ctx := context.Background()
	keys := keyserver.NameKeys{Lock: "job", Semaphore: layout.SemaphoreKey("job"), RW: layout.RWKey("job"), Election: layout.ElectionKey("job")}
	const permits = 10_000
	hold := func(n int) {
		t.Helper()
		for i, slot := range rand.Perm(permits)[:n] {
			h := keyserver.HoldSpec{Kind: keyserver.PermitHold, Key: keys.Semaphore, Token: fmt.Sprintf("p%d", i), Permits: permits, Slot: slot}
			if ok, _, err := s.AcquireHold(ctx, h, time.Minute); !ok || err != nil {
				t.Fatalf("AcquireHold(slot %d) = %v, %v", slot, ok, err)
			}
		}
	}
	hold(50)
	st, err := s.Inspect(ctx, keys)
	if err != nil || st.SlotsHeld != 50 || len(st.Slots) != 50 {
		t.Fatalf("50 held: SlotsHeld %d, %d listed, %v; want 50, 50", st.SlotsHeld, len(st.Slots), err)
	}

	s2 := memory.New()
	defer s2.Close()
	s = s2
	n := keyserver.MaxInspected + 100
	hold(n)
	for i := range 1100 {
		h := keyserver.HoldSpec{Kind: keyserver.ReadHold, Key: keys.RW, Token: fmt.Sprintf("r%d", i)}
		if ok, _, err := s.AcquireHold(ctx, h, time.Minute); !ok || err != nil {
			t.Fatalf("AcquireHold(read %d) = %v, %v", i, ok, err)
		}
	}
	st, err = s.Inspect(ctx, keys)
	if err != nil || st.SlotsHeld != n || len(st.Slots) != keyserver.MaxInspected {
		t.Fatalf("%d held: SlotsHeld %d, %d listed, %v; want %d, %d", n, st.SlotsHeld, len(st.Slots), err, n, keyserver.MaxInspected)
	}
	if st.ReadersHeld != 1100 || len(st.Readers) != keyserver.MaxInspected {
		t.Fatalf("1100 readers: ReadersHeld %d, %d listed; want 1100, %d", st.ReadersHeld, len(st.Readers), keyserver.MaxInspected)
	}
}
