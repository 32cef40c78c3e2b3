package redlock

import (
	"context"
	"sync"
	"time"
)

// gates let no more of a client's calls try for a primitive's key on the
// servers at once than could be granted together; the others wait in the
// process, where waiting costs no command ("Gates" in docs/design.md).
type gates struct {
	mu sync.Mutex
	m  map[string]*gate
}

// gate is one key's.
type gate struct {
	free  int           // calls that may still enter
	moved chan struct{} // closed, and replaced, when a call leaves
	users int           // calls inside or waiting; the gate is dropped at 0
	last  tally         // the votes of the last refused attempt of a call inside
}

// enterGate waits until fewer than max of this client's calls for key
// are inside, and returns the leave that the call must call exactly once
// and the note with which it tells the waiters its refusals. patience
// (0: none) bounds the wait between two calls leaving, as a call waiting
// in line on the servers has that much per waiter ahead; out of it, or
// when ctx ends or the client closes, enterGate returns the error
// (errOutOfPatience, as a lineup's, ctx's or ErrClosed) and the votes of
// the last refused attempt of a call inside, which stood in the way.
func (c *Client) enterGate(ctx context.Context, key string, max int, patience time.Duration) (leave func(), note func(tally), last tally, err error) {
	gs := &c.gates
	gs.mu.Lock()
	g := gs.m[key]
	if g == nil {
		if gs.m == nil {
			gs.m = make(map[string]*gate)
		}
		g = &gate{free: max, moved: make(chan struct{})}
		gs.m[key] = g
	}
	g.users++
	for g.free <= 0 {
		moved := g.moved
		gs.mu.Unlock()
		// Without patience the wait is still a sleep on the client's
		// clock (of a year, then again), which a fake clock's tests see.
		d := patience
		if d <= 0 {
			d = 365 * 24 * time.Hour
		}
		err := c.clock.SleepOrWake(ctx, d, []<-chan struct{}{moved, c.closing.Done()})
		gs.mu.Lock()
		switch {
		case err == nil && c.closing.Err() != nil:
			err = ErrClosed
		case err == nil && !closed(moved) && patience > 0:
			err = errOutOfPatience
		}
		if err != nil {
			last := g.last
			gs.dropLocked(key, g)
			gs.mu.Unlock()
			return nil, nil, last, err
		}
	}
	g.free--
	gs.mu.Unlock()
	var once sync.Once
	note = func(t tally) {
		gs.mu.Lock()
		g.last = t
		gs.mu.Unlock()
	}
	return func() {
		once.Do(func() {
			gs.mu.Lock()
			defer gs.mu.Unlock()
			g.free++
			close(g.moved)
			g.moved = make(chan struct{})
			gs.dropLocked(key, g)
		})
	}, note, tally{}, nil
}

// dropLocked counts a call out of g, and forgets g when no call uses it.
func (gs *gates) dropLocked(key string, g *gate) {
	g.users--
	if g.users == 0 && gs.m[key] == g {
		delete(gs.m, key)
	}
}
