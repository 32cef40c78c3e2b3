package keyserver

import "time"

// Delayer is a KeyServer that can keep a lock-delay: after a lock taken
// with one expires without a release, the server grants the key to no
// token until the delay has passed there, measured on the server's own
// clock. The redlock client asks for it with WithLockDelay, and then needs
// every server to implement it.
//
// Delayed(d) returns the server as the lock's calls see it: a view whose
// Acquire, Extend and Release (and AcquireOrHolder, AcquireInLine and
// AcquireFenced, which the view has whenever the server is a Notifier or
// a Fencer) act as the server's, except that
//
//   - a grant or renewal of key keeps it d past its TTL: key refuses every
//     other token, through every acquire variant of every client, until
//     ttl + d after the call, and a refusal's Holder.Left counts the delay
//     (it is how long until the key may be granted);
//   - the grant or renewal records d beside key, under the key
//     "{key}:delay" (or "key:delay" when key has a hash tag of its own),
//     holding d in milliseconds with the same TTL as key, so that a reader
//     tells the lease (key's TTL less d) from the delay after it;
//   - a Release that lets go of key (deletes it or promises it to the next
//     waiter) deletes the record too: a clean release costs nothing.
//
// Delayed(0) gives the same view with no delay: its grants, renewals and
// releases clear a record left by an earlier Delayed call of the same
// token (the redlock client cuts a lock held with WithMinHold through it).
// The server's own methods may leave such a record alone, which lets a
// server keep its common path as cheap as it was. The view's other methods
// (WatchTurn, LeaveLine, WatchContention, RaiseFence) are the server's.
//
// The record is the delay's only trace beside the key itself: a server
// that restarts empty loses both, and with them the delay (as it loses its
// lines), so the delay is as durable as the server's keys.
type Delayer interface {
	KeyServer
	// Delayed returns the server as one that keeps key d past the TTL
	// of each grant or renewal; see Delayer. d is at least 0.
	Delayed(d time.Duration) KeyServer
}
