package redlock

import (
	"context"
	"errors"
	"sync"

	"github.com/goredlock/goredlock/keyserver"
)

// Contended returns a channel that is closed when a waiter of another
// call (of any process) joins the line of a quorum of the lock's servers.
// Servers that cannot tell count as telling: those that keep no line, and
// Notifiers whose WatchContention fails with errors.ErrUnsupported or
// keyserver.ErrPermanent (a user denied SUBSCRIBE); but at least one must
// tell, and with none that can, it never closes. It is advice, not
// revocation: a program may use it to finish early and release. The
// servers are asked only once it is called, so a lock nobody asks about
// costs nothing ("Someone is waiting" in docs/design.md). The channel
// stays open for a lock already released or lost, and for a primitive's
// hold, which keeps no line.
func (l *Lock) Contended() <-chan struct{} {
	if l.zero() {
		return make(chan struct{})
	}
	l.mu.Lock()
	if r := l.r(); r.contended != nil {
		defer l.mu.Unlock()
		return r.contended
	}
	ch := make(chan struct{})
	l.r().contended = ch
	l.checkExpiry()
	ended := l.err != nil || !l.kind.traits().oneLine
	l.mu.Unlock()
	if !ended {
		l.watchContention(ch)
	}
	return ch
}

// watchContention watches the lock's servers' lines, each on a goroutine
// of its own until the lock ends or the client closes, and closes ch once
// enough of them told of a waiter.
func (l *Lock) watchContention(ch chan struct{}) {
	c := l.c
	if len(c.notifiers) == 0 {
		return // never: no server can tell
	}
	done := l.Done()
	if c.enter() != nil {
		return
	}
	go func() { // the watches, until the lock ends or the client closes
		defer c.exit()
		ctx, cancel := context.WithCancel(context.Background())
		var (
			mu     sync.Mutex
			told   int
			cannot = len(c.servers) - len(c.notifiers)
			closed bool
			wg     sync.WaitGroup
		)
		count := func(tells bool) { // a server told, or cannot tell
			mu.Lock()
			if tells {
				told++
			} else {
				cannot++
			}
			fire := !closed && told > 0 && told+cannot >= c.quorum
			closed = closed || fire
			mu.Unlock()
			if fire {
				close(ch)
				if h := c.hooks.Contended; h != nil {
					h(l.callCtx, l.name) // set by newLock, as the hook is
				}
			}
		}
		for _, i := range c.notifiers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if tells, cannot := l.watchServer(ctx, c.servers[i].(keyserver.Notifier)); tells || cannot {
					count(tells)
				}
			}()
		}
		finished := make(chan struct{})
		go func() { wg.Wait(); close(finished) }()
		select {
		case <-done:
		case <-c.closing.Done():
		case <-finished:
		}
		cancel()
		<-finished
	}()
}

// watchServer watches one server's line for the lock, again after a
// broken watch or a failure that may pass, until a waiter joins (told),
// the server cannot tell (cannot: a failure that retrying cannot fix) or
// ctx ends.
func (l *Lock) watchServer(ctx context.Context, ws keyserver.Notifier) (told, cannot bool) {
	c := l.c
	l.mu.Lock()
	timeout := l.b.timeout // as the last grant or extension set it
	l.mu.Unlock()
	for ctx.Err() == nil {
		wctx, cancel := c.clock.WithTimeout(ctx, timeout)
		contended, broken, stop, err := ws.WatchContention(wctx, l.key, l.token)
		cancel()
		if errors.Is(err, errors.ErrUnsupported) || errors.Is(err, keyserver.ErrPermanent) {
			return false, true
		}
		if err != nil {
			c.clock.Sleep(ctx, l.o.retryDelay) //nolint:errcheck // ctx's end is seen by the loop
			continue
		}
		select {
		case <-contended:
			stop()
			return true, false
		case <-broken:
			stop()
			c.clock.Sleep(ctx, l.o.retryDelay) //nolint:errcheck // as above
		case <-ctx.Done():
			stop()
		}
	}
	return false, false
}
