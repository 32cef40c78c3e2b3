// Package startcall is the protocol by which the redlock client starts a
// lock call on a key server without blocking, and the server hands the
// answer over when it comes: the client's and keyserver/redis's own
// plumbing, not part of what a third-party key server implements (the
// client calls such a server with its blocking methods).
//
// A key server's Starter is not one of its methods: the protocol's types
// are internal, so a method taking them would be an exported method that
// no program outside this module can call, listed among the server's API
// all the same. A package whose servers start calls registers, in its
// init, how to find a server's Starter (Register), and the client asks
// for it by the server (Of).
package startcall

import (
	"context"
	"sync"
	"time"

	"github.com/goredlock/goredlock/keyserver"
)

// Starter starts a key server's lock calls without blocking and hands
// their answers over when they come, such as a Redis server whose calls
// share one pipelined connection. A client that calls five servers at
// once then needs no goroutine per server per call: the server's own
// reader delivers each answer, and the caller is woken once, when the
// answers decide. Under load, on a machine whose cores the client shares
// with the servers, the goroutines and their wake-ups were a large part of
// the client's CPU per lock.
//
// Start is an addition to the server's blocking methods, never a
// replacement: a server may decline any call (for example one that takes
// more than one command, or while it has no connection), and the client
// then makes it with the blocking method.
type Starter interface {
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

// StartFunc is a function that is a Starter: what a server's package
// registers, its server's unexported start method as a value.
type StartFunc func(ctx context.Context, c Call, to Completion) bool

// Start calls f.
func (f StartFunc) Start(ctx context.Context, c Call, to Completion) bool { return f(ctx, c, to) }

// finders are the functions Register took, in order.
var finders struct {
	mu   sync.RWMutex
	list []func(keyserver.KeyServer) Starter
}

// Register adds find to the ways Of finds a key server's Starter: find
// returns the Starter of a server of its package's, and nil for any other
// server (or one of its own that starts no calls). Packages call it from
// init; tests may call it for a type of their own.
func Register(find func(keyserver.KeyServer) Starter) {
	finders.mu.Lock()
	defer finders.mu.Unlock()
	finders.list = append(finders.list, find)
}

// Of returns the Starter of ks, the first that a registered function
// returns, or nil when none does: the client then makes every call of ks
// with its blocking methods. The client asks once per server, when it is
// made.
func Of(ks keyserver.KeyServer) Starter {
	finders.mu.RLock()
	defer finders.mu.RUnlock()
	for _, find := range finders.list {
		if st := find(ks); st != nil {
			return st
		}
	}
	return nil
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
