package keyserver

import (
	"context"
	"time"
)

// Incarnator is a KeyServer that can tell which store it reaches, how
// long that store has held its data and whether it persists every write. A
// client uses it twice:
//
//   - to count each store once: two KeyServer values can reach one store
//     (two URLs that name one Redis differently), which would then grant
//     a quorum alone, so a client refuses servers whose incarnations share
//     an ID;
//   - to quarantine a store that restarted and lost its keys: a lock it
//     held for someone before the restart is gone, and granting the key
//     to another caller before that lock's TTL has passed could give two
//     holders a quorum each (Redlock's rule "stay down longer than the
//     largest TTL, or fsync every write", which otherwise only the
//     operator enforces).
//
// The answer must be cheap to ask for after every grant: a server reads
// it when its connection to the store is new or failed, not on every
// call, and ages it on its own clock in between. A server that answers in
// process, without I/O (InProcess), is asked neither: nothing else reaches
// its store, and it cannot restart under the client.
type Incarnator interface {
	KeyServer
	// Incarnation describes the store as it is now. An error means the
	// server cannot tell; the client then fails the vote it asks about
	// with that error (not as a restart), as it does any vote of the
	// server before its first answer.
	Incarnation(ctx context.Context) (Incarnation, error)
}

// Incarnation is one life of a store, between two restarts.
type Incarnation struct {
	// ID names the store in this life (for Redis, its run id): two
	// servers share it only when they reach the same store, and it changes
	// whenever the store restarts, so that a client that sees it change
	// knows the store restarted since it last looked, whatever Up says.
	// "" means the server cannot tell: it is compared with no other, and
	// only Up shows its restarts.
	ID string
	// Up is how long the store has held its data: since it last came
	// back empty, or first held anything, and never longer (Redis: the
	// age of a marker key the store loses with its data, on the store's
	// own clock, bounded by the uptime where a restart reloaded data).
	// The client quarantines a store whose Up is under a call's TTL,
	// whenever the client was made.
	Up time.Duration
	// Durable reports that the store persists every write before it
	// answers (Redis: appendonly yes and appendfsync always), so that a
	// restart loses no key and needs no quarantine.
	Durable bool
}
