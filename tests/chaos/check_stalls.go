package chaos

import (
	"context"
	"sync"
	"time"
)

// A loss heard late may be the library's lateness or the machine's: a
// process that the scheduler did not run for 100 ms hears every timer of
// that time 100 ms late, the holder's wake-up at a loss among them, and a
// history cannot tell the two apart (see lossSlack). The stall probe tells
// them apart for the test's own process: it wakes up again and again as a
// holder does at a loss (a timer's function closes a channel that another
// goroutine waits on), and records each wake-up that came late. A loss
// heard late, but before Until, while the probe was held up as long is the
// machine's: the run reports it apart (Result.Stalled), not as a
// violation. A loss heard after Until is a violation whatever the machine
// did.
//
// Several probes run at once: the runtime runs a timer on the processor
// (P) that armed it, and a loaded machine may stall the thread of one P
// while the others run on, so a single probe on another P than the loss's
// timer saw nothing of a stall that made a loss 55 ms late.

// probeTick is a probe's sleep; probeLate the lateness worth recording;
// probes how many probe at once (more than the Ps of a 2-core machine, as
// goroutines move between Ps).
const (
	probeTick = 2 * time.Millisecond
	probeLate = 5 * time.Millisecond
	probes    = 4
)

// stallProbe records the stalls of the process: when a wake-up came, and
// how late, on the history's clock.
type stallProbe struct {
	h      *History
	mu     sync.Mutex
	stalls []stall
}

// stall is one late wake-up of a probe: that probe ran no timer in
// (at − late, at].
type stall struct{ at, late time.Duration }

// run probes until ctx ends.
func (p *stallProbe) run(ctx context.Context) {
	var wg sync.WaitGroup
	for range probes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p.probe(ctx)
		}()
	}
	wg.Wait()
}

// probe is one probe: a loss's wake-up, timed, until ctx ends.
func (p *stallProbe) probe(ctx context.Context) {
	for {
		woke := make(chan struct{})
		due := time.Now().Add(probeTick)
		t := time.AfterFunc(probeTick, func() { close(woke) })
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-woke:
		}
		if late := time.Since(due); late >= probeLate {
			p.mu.Lock()
			p.stalls = append(p.stalls, stall{at: p.h.Now(), late: late})
			p.mu.Unlock()
		}
	}
}

// stalledFor is the longest stall that overlapped [from, to].
func (p *stallProbe) stalledFor(from, to time.Duration) time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	var worst time.Duration
	for _, s := range p.stalls {
		if s.at >= from && s.at-s.late <= to {
			worst = max(worst, s.late)
		}
	}
	return worst
}

// excuse takes out of vs the late losses that the probe's stalls explain:
// heard before Until, and no later past Until − Margin (and the slack)
// than the longest stall between Until − Margin, when the loss was due,
// and when it was heard. It returns the rest and how many it took out.
func (p *stallProbe) excuse(vs []Violation, grants []Grant) (rest []Violation, excused int) {
	byID := make(map[int]Grant, len(grants))
	for _, g := range grants {
		byID[g.ID] = g
	}
	for _, v := range vs {
		if v.Kind == LateLoss && len(v.Grants) == 1 {
			g, ok := byID[v.Grants[0]]
			due := g.Until - g.Margin
			if ok && g.Lost < g.Until && g.Lost-due-lossSlack(g.Margin) <= p.stalledFor(due, g.Lost) {
				excused++
				continue
			}
		}
		rest = append(rest, v)
	}
	return rest, excused
}
