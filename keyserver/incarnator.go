package keyserver

import (
	"context"
	"time"
)

// Incarnator is a KeyServer that can tell how long its store has been up
// and whether it persists every write, so that a client can quarantine a
// store that restarted and lost its keys: a lock it held for someone
// before the restart is gone, and granting the key to another caller
// before that lock's TTL has passed could give two holders a quorum each
// (Redlock's rule "stay down longer than the largest TTL, or fsync every
// write", which otherwise only the operator enforces).
//
// The answer must be cheap to ask for after every grant: a server reads
// it when its connection to the store is new or failed, not on every
// call, and ages it on its own clock in between.
type Incarnator interface {
	KeyServer
	// Incarnation describes the store as it is now. An error means the
	// server cannot tell; the client then does not count the grant it
	// asks about.
	Incarnation(ctx context.Context) (Incarnation, error)
}

// Incarnation is one life of a store, between two restarts.
type Incarnation struct {
	// ID changes whenever the store restarts (for Redis, its run id); a
	// client that sees it change knows the store restarted since it last
	// looked, whatever Up says.
	ID string
	// Up is how long the store has been up: no longer than it really has
	// (Redis reports whole seconds, rounded down).
	Up time.Duration
	// Durable reports that the store persists every write before it
	// answers (Redis: appendonly yes and appendfsync always), so that a
	// restart loses no key and needs no quarantine.
	Durable bool
}
