package redigotransport

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/goredlock/goredlock/internal/clock"
)

// The expiry and a call's caller (pipeline.await) and answerer
// (call.finish) between them: every way a reply and the deadline can meet
// gives the caller one outcome, signals done once, and recycles the call
// once, by whoever is last.

// expiring returns a call the expiry watches, its deadline after d, and its
// caller's context: the client's kind, whose own timer is never armed.
func expiring(t *testing.T, p *pipeline, parent context.Context, d time.Duration) (*call, context.Context) {
	t.Helper()
	ctx, cancel := clock.Real{}.WithTimeout(parent, d)
	t.Cleanup(cancel)
	c, _ := newCall([]string{"GET"}, []string{"k"}, nil)
	c.due, _ = ctx.Deadline()
	if l, ok := ctx.(lazyContext); !ok {
		t.Fatal("the client's context is no lazyContext")
	} else if _, unarmed := l.Unarmed(); !unarmed {
		t.Fatal("the client's context is armed before anyone waited")
	}
	p.expiry.add(c)
	return c, ctx
}

func TestExpiryReplyInTime(t *testing.T) {
	p := &pipeline{}
	defer p.expiry.stop()
	c, ctx := expiring(t, p, context.Background(), time.Hour)
	c.finish("v", nil)
	reply, _, err := p.await(ctx, c, nil)
	if reply != "v" || err != nil {
		t.Fatalf("await = %v, %v; want the reply", reply, err)
	}
	if p.expiry.head != nil {
		t.Fatal("an answered call is still watched")
	}
}

func TestExpiryEndsTheWaitAtTheDeadline(t *testing.T) {
	p := &pipeline{}
	defer p.expiry.stop()
	c, ctx := expiring(t, p, context.Background(), 20*time.Millisecond)
	reply, _, err := p.await(ctx, c, nil)
	if !errors.Is(err, context.DeadlineExceeded) || reply != nil {
		t.Fatalf("await = %v, %v; want DeadlineExceeded", reply, err)
	}
	// The deadline itself, not 20 ms from a start taken after the context
	// was made (a loaded machine can let that start come late).
	if early := time.Until(c.due); early > 0 {
		t.Fatalf("the wait ended %v before the deadline", early)
	}
	if c.state.Load() != abandoned || c.linked {
		t.Fatalf("state %d, linked %v: want abandoned, unlinked", c.state.Load(), c.linked)
	}
	c.finish("late", nil) // the reader, later: recycles the call
	if c.state.Load() != waiting || c.reply != nil || len(c.done) != 0 {
		t.Fatalf("state %d, reply %v, signals %d: the late reply did not recycle the call", c.state.Load(), c.reply, len(c.done))
	}
}

func TestExpiryMeetsTheReply(t *testing.T) {
	p := &pipeline{}
	defer p.expiry.stop()
	c, ctx := expiring(t, p, context.Background(), time.Millisecond)
	for c.state.Load() != overDeadline { // the expiry ends the wait before the caller looks
		time.Sleep(time.Millisecond)
	}
	c.finish("v", nil) // and the reply comes before the caller wakes
	if c.state.Load() != answeredLate {
		t.Fatalf("state %d after the late reply, want answeredLate", c.state.Load())
	}
	reply, _, err := p.await(ctx, c, nil)
	if reply != "v" || err != nil {
		t.Fatalf("await = %v, %v; want the reply that came", reply, err)
	}
	if len(c.done) != 0 {
		t.Fatal("done was signalled twice")
	}
}

func TestExpiryParentCancelled(t *testing.T) {
	p := &pipeline{}
	defer p.expiry.stop()
	parent, cancel := context.WithCancel(context.Background())
	c, ctx := expiring(t, p, parent, time.Hour)
	cancel()
	reply, _, err := p.await(ctx, c, parent.Done())
	if !errors.Is(err, context.Canceled) || reply != nil {
		t.Fatalf("await = %v, %v; want Canceled", reply, err)
	}
	if c.state.Load() != abandoned || p.expiry.head != nil {
		t.Fatalf("state %d, still watched %v: want abandoned, unwatched", c.state.Load(), p.expiry.head != nil)
	}
}

// TestExpiryRearms: the timer, armed for the earliest deadline, ends each
// call at its own, whichever came first and in whatever order they were
// added.
func TestExpiryRearms(t *testing.T) {
	p := &pipeline{}
	defer p.expiry.stop()
	late, lateCtx := expiring(t, p, context.Background(), 60*time.Millisecond)
	soon, soonCtx := expiring(t, p, context.Background(), 5*time.Millisecond)
	answered, answeredCtx := expiring(t, p, context.Background(), time.Millisecond)
	answered.finish("v", nil) // answered before its deadline, which armed the timer
	if reply, _, err := p.await(answeredCtx, answered, nil); reply != "v" || err != nil {
		t.Fatalf("await = %v, %v; want the reply", reply, err)
	}
	for _, w := range []struct {
		c   *call
		ctx context.Context
	}{{soon, soonCtx}, {late, lateCtx}} {
		if _, _, err := p.await(w.ctx, w.c, nil); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("await = %v, want DeadlineExceeded", err)
		}
		if d, _ := w.ctx.Deadline(); time.Now().Before(d) {
			t.Fatal("a wait ended before its deadline")
		}
	}
	if p.expiry.head != nil {
		t.Fatal("a call is still watched")
	}
}
