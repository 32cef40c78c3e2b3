package main

import (
	"context"
	"errors"
	"time"
)

// locker is one library set up to take locks on the benchmark's nodes.
type locker interface {
	// lock takes the lock called name, waiting and retrying as the library
	// does by default, and returns the call that releases it. An error
	// means the library gave up (or ctx ended).
	lock(ctx context.Context, name string) (unlock func(context.Context) error, err error)
	// close releases the library's connections.
	close() error
}

// peer is a library with the settings it is benchmarked with.
type peer struct {
	name string
	// title names it in the tables when the name alone does not say enough.
	title func(settings) string
	// about says how the library is set up, for the notes under the tables.
	about string
	// skip says why the peer does not run on n nodes or workload w; "" runs it.
	skip func(n int, w workload) string
	open func(addrs []string, s settings) (locker, error)
	// uncontendedAs names the peer whose uncontended figures stand for this
	// one's, for a peer that skips the uncontended workload as the same.
	uncontendedAs string
	// extra leaves the peer out of the default run: it measures goredlock
	// over another transport or a primitive, and runs when -peers names it.
	extra bool
	// sets marks a peer that takes sets of names (sets.go): the only
	// peers that run the set workloads, which the others skip.
	sets bool
}

// settings are the knobs every peer is given the same way.
type settings struct {
	ttl   time.Duration // lock TTL (validity for rueidislock)
	retry time.Duration // the short retry delay: goredlock's variant, bsm/redislock, the floor
}

func peers() []peer {
	return append([]peer{
		goredlockPeer(),
		goredlockNoHandOverPeer(),
		goredlockRetryPeer(),
		redsyncPeer(),
		rueidislockPeer(),
		redislockPeer(),
		floorPeer(),
	}, append(append(transportPeers(), primitivePeers()...), setPeers()...)...)
}

// label is the peer's name in the tables.
func (p peer) label(s settings) string {
	if p.title != nil {
		return p.title(s)
	}
	return p.name
}

func runsAlways(int, workload) string { return "" }

// errNotReleased is the unlock error of libraries that report a release
// on too few nodes with a boolean rather than an error.
var errNotReleased = errors.New("not released on a majority of nodes")
