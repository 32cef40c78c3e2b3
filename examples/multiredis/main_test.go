package main

import (
	"context"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/goredlock/goredlock/internal/redistest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestSurvivesSilentMinority(t *testing.T) {
	cluster := redistest.Start(t, 5)
	// Stragglers may still log after run returns: read under the
	// writer's lock.
	var b strings.Builder
	out := &syncWriter{w: &b}
	if err := run(context.Background(), out, cluster.URLs(""), true); err != nil {
		t.Fatalf("%v\n%s", err, read(out, &b))
	}
	for _, want := range []string{"acquire with a minority silent", "extend with a minority silent", "release with a minority silent"} {
		if !strings.Contains(read(out, &b), want) {
			t.Errorf("output lacks %q:\n%s", want, read(out, &b))
		}
	}
	if strings.Count(read(out, &b), " ok\n") != 5 {
		t.Errorf("not every step succeeded:\n%s", read(out, &b))
	}
	t.Log("\n" + read(out, &b))
}

func read(out *syncWriter, b *strings.Builder) string {
	out.mu.Lock()
	defer out.mu.Unlock()
	return b.String()
}
