package main

import (
	"context"
	"strings"
	"sync"
	"testing"

	"go.uber.org/goleak"

	"github.com/goredlock/goredlock/internal/redistest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestSurvivesSilentMinority(t *testing.T) {
	cluster := redistest.Start(t, 5)
	var out lockedBuilder
	if err := run(context.Background(), &out, cluster.URLs(""), true); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	for _, want := range []string{"acquire with a minority silent", "extend with a minority silent", "release with a minority silent"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	if strings.Count(out.String(), " ok\n") != 5 {
		t.Errorf("not every step succeeded:\n%s", out.String())
	}
	t.Log("\n" + out.String())
}

// lockedBuilder is read by the test while stragglers may still log into it.
type lockedBuilder struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuilder) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuilder) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
