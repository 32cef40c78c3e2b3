package redlock

import (
	"context"
	"testing"
	"time"

	"github.com/goredlock/goredlock/keyserver"
	"github.com/goredlock/goredlock/keyserver/memory"
)

func TestSmoke(t *testing.T) {
	var ks []keyserver.KeyServer
	for i := 0; i < 3; i++ {
		s := memory.New()
		defer s.Close()
		ks = append(ks, s)
	}
	c, err := New(ks)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	l, err := c.Acquire(ctx, "x", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.TryAcquire(ctx, "x", time.Second); err == nil {
		t.Fatal("second acquire succeeded")
	} else {
		t.Log(err)
	}
	if err := l.Extend(ctx, time.Second); err != nil {
		t.Fatal(err)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	t.Log(l.Release(ctx))
	err = c.Do(ctx, "y", 300*time.Millisecond, func(ctx context.Context) error {
		time.Sleep(time.Second)
		return ctx.Err()
	})
	t.Log("do:", err)
	c.bg.Wait()
}
