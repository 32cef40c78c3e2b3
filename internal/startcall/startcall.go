// Package startcall is the protocol by which the redlock client starts a
// lock call on a key server without blocking, and the server hands the
// answer over when it comes: the client's and keyserver/redis's own
// plumbing, not part of what a third-party key server implements (the
// client calls such a server with its blocking methods).
package startcall

import (
	"context"
	"time"

	"github.com/goredlock/goredlock/keyserver"
)

// Starter is implemented by key servers that can start a lock call
// without blocking and hand its answer over when it comes, such as a
// Redis server whose calls share one pipelined connection. A client that
// calls five servers at once then needs no goroutine per server per call:
// the server's own reader delivers each answer, and the caller is woken
// once, when the answers decide. Under load, on a machine whose cores the
// client shares with the servers, the goroutines and their wake-ups were
// a large part of the client's CPU per lock.
//
// Start is an addition to the blocking methods, never a replacement: a
// server may decline any call (for example one that takes more than one
// command, or while it has no connection), and the client then makes it
// with the blocking method.
type Starter interface {
	keyserver.KeyServer
	// Start starts c and reports whether it did. Once it did, to.Complete
	// is called exactly once (unless to.Continue said no), with the
	// answer the blocking method would have given, from a goroutine of
	// the server's (never within Start).
	// The server does not give up on a call at c.Deadline: the caller
	// stops waiting then, and the answer comes when the server answers or
	// its connection is given up on. ctx's values reach the call; its
	// cancellation is not watched once the call is sent.
	Start(ctx context.Context, c Call, to Completion) bool
}

// CallOp names the method a Call stands for.
type CallOp uint8

const (
	// CallAcquire is KeyServer.Acquire.
	CallAcquire CallOp = iota
	// CallAcquireOrHolder is keyserver.Notifier.AcquireOrHolder.
	CallAcquireOrHolder
	// CallAcquireInLine is keyserver.Notifier.AcquireInLine, with Next.
	CallAcquireInLine
	// CallExtend is KeyServer.Extend.
	CallExtend
	// CallRelease is KeyServer.Release.
	CallRelease
)

// Call is one call of a Starter: the method and its arguments.
type Call struct {
	Op         CallOp        // which method the call stands for
	Key, Token string        // the method's key and token, as the blocking method takes them
	TTL        time.Duration // the acquires and Extend
	Next       string        // CallAcquireInLine's next
	// Keys, if not empty, make the call one about a set of lock keys
	// (keyserver.SetLocker): CallAcquireOrHolder stands for AcquireAll,
	// CallExtend for ExtendAll and CallRelease for ReleaseAll; Key then
	// only names the set in errors.
	Keys []string
	// Lines, if not empty, are the lines of Keys (layout.LineKey), in
	// their order: made once per set by the caller, and not by the
	// server per call.
	Lines []string
	// Deadline is when the caller stops waiting: what the server measures
	// a late answer from, as from a blocking call's context deadline.
	Deadline time.Time
	// Incarnation asks a server that is an Incarnator to read its
	// Incarnation once it has answered without an error, into the
	// Answer, as the caller would read it next: so that a caller that
	// judges grants by it need not block.
	Incarnation bool
}

// Answer is a key server's answer to a started Call.
type Answer struct {
	OK     bool             // the blocking method's bool: granted, extended or released
	Holder keyserver.Holder // of a refused CallAcquireOrHolder or CallAcquireInLine
	Err    error            // the blocking method's error
	// Incarnation, or IncarnationErr, is what Call.Incarnation asked for;
	// both zero when it was not asked or Err is set.
	Incarnation    keyserver.Incarnation
	IncarnationErr error
}

// Completion receives the answer of a started Call. Its methods must not
// block: they run on the server's goroutine that reads the answers.
type Completion interface {
	// Continue is asked before the server sends a command about the key
	// after the call's first one (the script after a refused SET NX, the
	// source after NOSCRIPT). False means the caller no longer wants the
	// rest: it counted the call as failed, or has sent a later call to the
	// same key that must not be overtaken. The server then sends nothing
	// more of the call, and does not call Complete.
	Continue() bool
	// Complete takes the answer.
	Complete(a Answer)
}
