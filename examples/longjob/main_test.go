package main

import (
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestLongJob(t *testing.T) {
	// Stragglers may still log after run returns: read under the
	// writer's lock.
	var b strings.Builder
	out := &syncWriter{w: &b}
	if err := run(out, 200*time.Millisecond); err != nil {
		t.Fatalf("%v\n%s", err, read(out, &b))
	}
	s := read(out, &b)
	for _, want := range []string{"job 1 returned: ok", "step 10 done", "interrupted: redlock: lock lost", "job 2 returned:"} {
		if !strings.Contains(s, want) {
			t.Errorf("output lacks %q:\n%s", want, s)
		}
	}
	if strings.Count(s, "step 10 done") != 1 {
		t.Errorf("job 2 ran to its end:\n%s", s)
	}
}

func read(out *syncWriter, b *strings.Builder) string {
	out.mu.Lock()
	defer out.mu.Unlock()
	return b.String()
}
