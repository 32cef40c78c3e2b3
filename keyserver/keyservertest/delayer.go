package keyservertest

import (
	"context"
	"testing"
	"time"

	"github.com/goredlock/goredlock/keyserver"
)

// delayerChecks are the checks of keyserver.Delayer; a server that does
// not implement it passes them.
func (s *suite) delayerChecks() []check {
	return []check{
		{"LockDelayOutlivesTheLease", s.lockDelayOutlivesTheLease},
		{"LockDelayEndsWithARelease", s.lockDelayEndsWithARelease},
		{"LockDelayViewsMatchTheServer", s.lockDelayViewsMatchTheServer},
	}
}

// untilGranted tries Acquire(token) until it is granted, and fails t when
// it is still refused after within; it returns when the granted call
// began, on real time (a fake clock is advanced in steps of step).
func (s *suite) untilGranted(t *testing.T, ks keyserver.KeyServer, key, token string, step, within time.Duration) time.Time {
	t.Helper()
	ctx := context.Background()
	start := time.Now()
	waited := time.Duration(0)
	for {
		began := time.Now()
		ok, err := ks.Acquire(ctx, key, token, ttl)
		if err != nil {
			t.Fatalf("Acquire(%s) while waiting for the key: %v", token, err)
		}
		if ok {
			return began
		}
		if waited >= within || time.Since(start) > within {
			t.Fatalf("Acquire(%s) still refused %v on", token, within)
		}
		s.wait(step)
		waited += step
	}
}

// lockDelayOutlivesTheLease: a key set through Delayed(d) and left to
// expire refuses every other token, through every acquire variant, until
// d after its TTL, and a refusal's Left counts the delay.
func (s *suite) lockDelayOutlivesTheLease(t *testing.T, ks keyserver.KeyServer, key string) {
	ds, ok := ks.(keyserver.Delayer)
	if !ok {
		return
	}
	ctx := context.Background()
	short, d := s.d(200*time.Millisecond), s.d(1500*time.Millisecond)
	v := ds.Delayed(d)
	expect(t, "Delayed(d).Acquire(a)", true)(v.Acquire(ctx, key, "a", short))
	set := time.Now() // a's key was set before, so it lives past set + short + d
	expect(t, "Delayed(d).Acquire(a) again by its holder", true)(v.Acquire(ctx, key, "a", short))
	s.wait(short + short/2) // the lease is over; the delay is not
	expect(t, "Acquire(b) in a's delay", false)(ks.Acquire(ctx, key, "b", ttl))
	expect(t, "Extend(b) in a's delay", false)(ks.Extend(ctx, key, "b", ttl))
	expect(t, "Delayed(d).Acquire(b) in a's delay", false)(v.Acquire(ctx, key, "b", ttl))
	if ns, ok := ks.(keyserver.Notifier); ok {
		ok, h, err := ns.AcquireOrHolder(ctx, key, "b", ttl)
		if err != nil || ok {
			t.Fatalf("AcquireOrHolder(b) in a's delay = %v, %v; want false, nil", ok, err)
		}
		// Left is the time until the key may be granted: at most what is
		// left of short + d, and more than a lease's worth.
		if h.Left <= 0 || h.Left > short+d {
			t.Errorf("AcquireOrHolder(b) in a's delay reported %v left; want the rest of %v", h.Left, short+d)
		}
		if f, ok := ks.(keyserver.Fencer); ok {
			ok, _, err := f.AcquireFenced(ctx, key, "b", ttl)
			if err != nil || ok {
				t.Fatalf("AcquireFenced(b) in a's delay = %v, %v; want false, nil", ok, err)
			}
		}
	}
	granted := s.untilGranted(t, ks, key, "b", s.d(100*time.Millisecond), s.d(10*time.Second))
	if after := granted.Sub(set); s.advance == nil && after < short+d-2*time.Millisecond {
		t.Errorf("Acquire(b) was granted %v after a took the key for %v with a delay of %v; want no sooner than their sum", after, short, d)
	}
	expect(t, "Release(b)", true)(ks.Release(ctx, key, "b"))
}

// lockDelayEndsWithARelease: a release through Delayed(d), of a key held
// or in its delay, leaves no delay; so does a cut through Delayed(0).
func (s *suite) lockDelayEndsWithARelease(t *testing.T, ks keyserver.KeyServer, key string) {
	ds, ok := ks.(keyserver.Delayer)
	if !ok {
		return
	}
	ctx := context.Background()
	short, d := s.d(200*time.Millisecond), time.Minute
	v := ds.Delayed(d)
	expect(t, "Delayed(d).Acquire(a)", true)(v.Acquire(ctx, key, "a", ttl))
	expect(t, "Delayed(d).Release(a) of the held key", true)(v.Release(ctx, key, "a"))
	expect(t, "Acquire(b) after a's release", true)(ks.Acquire(ctx, key, "b", ttl))
	expect(t, "Release(b)", true)(ks.Release(ctx, key, "b"))

	expect(t, "Delayed(d).Acquire(a)", true)(v.Acquire(ctx, key, "a", short))
	s.wait(short + short/2)
	expect(t, "Acquire(b) in a's delay", false)(ks.Acquire(ctx, key, "b", ttl))
	expect(t, "Delayed(d).Release(a) in its delay", true)(v.Release(ctx, key, "a"))
	expect(t, "Acquire(b) after a's release in its delay", true)(ks.Acquire(ctx, key, "b", ttl))
	expect(t, "Release(b)", true)(ks.Release(ctx, key, "b"))

	expect(t, "Delayed(d).Acquire(a)", true)(v.Acquire(ctx, key, "a", ttl))
	expect(t, "Delayed(0).Extend(a) to a short TTL", true)(ds.Delayed(0).Extend(ctx, key, "a", short))
	s.untilGranted(t, ks, key, "b", s.d(100*time.Millisecond), s.d(10*time.Second))
	expect(t, "Release(b)", true)(ks.Release(ctx, key, "b"))
}

// lockDelayViewsMatchTheServer: a view is a Notifier or a Fencer where its
// server is one, since the client calls every acquire variant through it.
func (s *suite) lockDelayViewsMatchTheServer(t *testing.T, ks keyserver.KeyServer, _ string) {
	ds, ok := ks.(keyserver.Delayer)
	if !ok {
		return
	}
	v := ds.Delayed(time.Second)
	if _, ok := ks.(keyserver.Notifier); ok {
		if _, ok := v.(keyserver.Notifier); !ok {
			t.Errorf("Delayed of a Notifier (%T) is not one", v)
		}
	}
	if _, ok := ks.(keyserver.Fencer); ok {
		if _, ok := v.(keyserver.Fencer); !ok {
			t.Errorf("Delayed of a Fencer (%T) is not one", v)
		}
	}
}
