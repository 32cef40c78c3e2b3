package keyserver

import (
	"context"
	"time"
)

// Notifier is a KeyServer that keeps, per key, a line of the calls waiting
// for it, so that waiters in every process that shares the server are
// served first come, first served and a release wakes only the next of
// them, instead of every waiter trying at once and splitting the vote.
//
// A waiting call is known by the rank its tokens carry, the same for all
// of its attempts (Compare states the rule), so that the attempts of one
// call, each with a fresh token, share one place in line, and every server
// orders the waiters alike. A key promised to a call holds PromiseOf its
// token, which no token can equal. The life of a wait on one server:
//
//   - AcquireInLine is refused because another token holds the key: the
//     caller is put in the key's line (or keeps its place).
//   - WatchTurn then watches for its turn; it looks once more after it
//     started listening, so that a turn that came in between is not missed.
//   - A Release of the key, when waiters are in line, does not free the
//     key: it promises it, for 500 ms, to the earliest of them, takes that
//     waiter out of line and tells it (its turn). While promised, the key
//     refuses every other token, so that nobody overtakes the line.
//   - The waiter's next AcquireInLine claims the promise: the key then
//     holds its token, with its own TTL.
//   - A waiter that stops waiting leaves with LeaveLine; a promise made to
//     it passes to the next waiter.
//
// Order is advisory, exclusion is not: a server that restarts empty loses
// its line, which costs order, never safety; a key is free while others
// wait in line only when its holder, or the waiter it was promised to,
// stopped answering, and a free key goes to the first caller, as with
// Acquire. The line itself lives LineTTL after the last AcquireInLine, so
// that the places of waiters that died do not outlive them for long.
//
// A key promised to a rank is that rank's call's to claim: Acquire,
// AcquireOrHolder, AcquireInLine and Extend with a token of that rank store
// the token. Release deletes only a token, never a promise: the clean-up
// of a failed attempt, sent to every server, must not give away a promise
// that a server made to the caller meanwhile. A call passes on a promise
// it will not claim with LeaveLine. A waiter that gives back what a failed
// attempt was granted does so with ReleaseInLine, which keeps its place:
// with Release, the key would go to the waiter behind it.
type Notifier interface {
	KeyServer
	// AcquireOrHolder is Acquire that, when another token holds key (or
	// it is promised to another rank), also describes that holder on this
	// server. It never puts the caller in line: TryAcquire and the first
	// attempt of DoOrSkip, which do not wait, call it.
	AcquireOrHolder(ctx context.Context, key, token string, ttl time.Duration) (ok bool, h Holder, err error)
	// AcquireInLine is AcquireOrHolder for a call that waits its turn: a
	// refused caller is put in key's line under its token's rank, or keeps
	// its place there; a granted one leaves it. A token that carries no
	// rank is not put in line.
	//
	// next, if not empty, is a token of another call of the caller's
	// process that waits for key behind the caller: it is put in line too
	// (or keeps its place), whatever the answer, so that the waiters of a
	// process join the line with the attempts of the one ahead of them
	// instead of a refused attempt each.
	AcquireInLine(ctx context.Context, key, token string, ttl time.Duration, next string) (ok bool, h Holder, err error)
	// WatchTurn watches key's line on this server for the waiter ranked
	// as token. turn is closed once key is promised to that waiter, also
	// when that happened after the waiter's last refusal and before
	// WatchTurn returned; or once the watch broke (a lost connection):
	// either way the waiter should try again. A key that its holder left
	// to expire gives no turn: the waiter tries again by the holder's TTL,
	// which its refusal reported. stop ends the watch and must be called
	// exactly once. ctx bounds only the setting up of the watch.
	//
	// A turn is told to the waiter's process only, not to every process
	// that waits for the key: a release costs the same however many
	// processes wait. Watches are cheap: a server shares one subscription
	// among the waiters of a process, and one connection among all keys.
	WatchTurn(ctx context.Context, key, token string) (turn <-chan struct{}, stop func(), err error)
	// LeaveLine takes the waiter ranked as token out of key's line. If key
	// was promised to it, the promise passes to the next waiter, or key is
	// freed when there is none.
	LeaveLine(ctx context.Context, key, token string) error
	// ReleaseInLine is Release for a waiter that gives back what an attempt
	// that failed on the other servers was granted (the attempt claimed a
	// promise, or found the key free): when others wait in key's line, the
	// waiter takes its place there again first, so that key is promised to
	// the earliest waiter counting it, and to itself when it is that one.
	// With nobody waiting key is freed, as by Release, and the caller is in
	// no line: a promise to a call that then ends elsewhere would hold up
	// the next caller for 500 ms. It reports whether token held key; a
	// token that carries no rank is released as by Release.
	ReleaseInLine(ctx context.Context, key, token string) (bool, error)
	// WatchContention watches key's line for the holder whose token is
	// token, set up only when the holder asks, so that a lock nobody
	// asks about costs nothing more: the redlock client's Lock.Contended,
	// a hint on which a holder may finish early and release. contended is
	// closed once a waiter joins the line after the watch was set up, or
	// at once when the line already holds one (its places outlive a
	// waiter by LineTTL at most, so a waiter that just left may still
	// count). broken is closed instead when the watch broke (a lost
	// connection): a waiter may have joined unseen, and the caller may
	// watch again. stop ends the watch and must be called exactly once.
	// ctx bounds only the setting up of the watch.
	//
	// It is advice: a waiter may have left already, and no waiter is ever
	// granted the key while the holder holds it. A server that cannot
	// tell fails with an error matching errors.ErrUnsupported, and serves
	// its waiters as well: the client counts it among the servers that
	// cannot tell, which Lock.Contended does not wait for, as it counts
	// one failing with keyserver.ErrPermanent, which it asks no more (so
	// mark permanent only what retrying cannot mend).
	WatchContention(ctx context.Context, key, token string) (contended, broken <-chan struct{}, stop func(), err error)
}

// LineTTL is how long a key's line outlives the last AcquireInLine of the
// key: waiters renew their places by trying again at least every
// LineTTL/3.
const LineTTL = 3 * time.Second

// Holder describes the token that holds a key, as a refused
// AcquireOrHolder or AcquireInLine reports it.
type Holder struct {
	// Left is how long the holder's key (or the promise) has left to live
	// on this server; 0 when unknown, such as for a key with no TTL.
	Left time.Duration
	// Rank tells whose Acquire began first: Compare(holder, caller), -1
	// for the holder's, +1 for the caller's, 0 when unranked, so that
	// contenders who split the servers between them agree on which of them
	// gives way. A promised key ranks as the waiter it is promised to.
	Rank int
	// Ahead is how many waiters the key's line holds before the caller,
	// as a refused AcquireInLine found it; 0 for AcquireOrHolder. A
	// waiter measures its patience by it: the line moving towards it is
	// progress.
	Ahead int
	// Promised, for a refused SetLocker.AcquireAllInLine, has bit i set
	// when the set's keys[i] is promised to the caller's call and kept for
	// it: the caller watches for the turns of the other keys only.
	Promised uint64
}
