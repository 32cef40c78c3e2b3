package redlock

import (
	"context"

	"github.com/goredlock/goredlock/keyserver"
)

// watchTurns watches, on Notifier ns, for the turn of the call that token
// belongs to in the lines of the set's keys, but those the server keeps
// promised to the call already (bit i of promised for keys[i]): those are
// the call's, and a watch of them would fire at once. The call waits on
// every channel it returns, so a waiting set tries again as soon as one
// more of its keys is promised to it ("Several names without deadlock" in
// docs/design.md); the one stop ends every watch.
func (so *setOps) watchTurns(ctx context.Context, ns keyserver.Notifier, token string, promised uint64) ([]<-chan struct{}, func(), error) {
	var (
		turns []<-chan struct{}
		stops []func()
	)
	stopAll := func() {
		for _, stop := range stops {
			stop()
		}
	}
	for i, k := range so.keys {
		if promised&bit(i) != 0 {
			continue
		}
		turn, stop, err := ns.WatchTurn(ctx, k, token)
		if err != nil {
			stopAll()
			return nil, nil, err
		}
		turns, stops = append(turns, turn), append(stops, stop)
	}
	if len(turns) == 0 {
		return nil, nil, errNoWatch // every key is promised to it: nothing to wait for here
	}
	return turns, stopAll, nil
}
