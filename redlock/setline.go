package redlock

import (
	"context"
	"sync"

	"github.com/goredlock/goredlock/keyserver"
)

// watchTurns watches, on Notifier ns, for the turn of the call that token
// belongs to in the lines of the set's keys, but those the server keeps
// promised to the call already (bit i of promised for keys[i]): those are
// the call's, and a watch of them would fire at once. The watches make one
// channel, closed on the first turn, and one stop: a waiting set tries
// again as soon as one more of its keys is promised to it ("Several names
// without deadlock" in docs/design.md).
func (so *setOps) watchTurns(ctx context.Context, ns keyserver.Notifier, token string, promised uint64) (<-chan struct{}, func(), error) {
	var (
		turns []<-chan struct{}
		stops []func()
	)
	for i, k := range so.keys {
		if promised&bit(i) != 0 {
			continue
		}
		turn, stop, err := ns.WatchTurn(ctx, k, token)
		if err != nil {
			for _, stop := range stops {
				stop()
			}
			return nil, nil, err
		}
		turns, stops = append(turns, turn), append(stops, stop)
	}
	switch len(turns) {
	case 0:
		return nil, nil, errNoWatch // every key is promised to it: nothing to wait for here
	case 1:
		return turns[0], stops[0], nil
	}
	turn, stop := firstOf(turns, stops)
	return turn, stop, nil
}

// firstOf merges turns into one channel, closed when the first of them is,
// and stops into one stop, which ends the goroutine of each channel and
// then calls every stop, once.
func firstOf(turns []<-chan struct{}, stops []func()) (<-chan struct{}, func()) {
	var (
		first, done  = make(chan struct{}), make(chan struct{})
		fired, ended sync.Once
		wg           sync.WaitGroup
	)
	for _, turn := range turns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case <-turn:
				fired.Do(func() { close(first) })
			case <-done:
			}
		}()
	}
	return first, func() {
		ended.Do(func() {
			close(done)
			wg.Wait()
			for _, stop := range stops {
				stop()
			}
		})
	}
}
