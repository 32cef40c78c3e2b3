package redlock

import (
	"errors"
	"fmt"
	"strings"

	"github.com/hashicorp/go-multierror"

	"github.com/goredlock/goredlock/keyserver"
)

var (
	// ErrNotAcquired means a quorum of servers did not grant the lock (or
	// the extension) in time: it is held elsewhere, or too many servers
	// failed. The error that carries it also carries each server's failure
	// as a *ServerError, and the context's error when the context ended
	// first.
	ErrNotAcquired = errors.New("redlock: not acquired")

	// ErrNotHeld means the lock is no longer this process's to extend or
	// release: it was released already, its validity ran out, or a quorum
	// of servers no longer holds its token.
	ErrNotHeld = errors.New("redlock: lock not held")

	// ErrLockLost is what Lock.Err reports, and the cause of Do's context,
	// once a lock's validity ran out (or a quorum of servers was found
	// holding another token) before it was released.
	ErrLockLost = errors.New("redlock: lock lost")

	// ErrInvalidArgument reports bad input: an empty server list, a nil
	// server, a bad option value, an empty lock name, a TTL too short to
	// survive the clock drift, a nil function. It is the same value as
	// keyserver.ErrInvalidArgument, so one errors.Is test covers the client
	// and the key servers.
	ErrInvalidArgument = keyserver.ErrInvalidArgument
)

// ServerError is one key server's failure to answer: a network error, a
// timeout, a key of the wrong type. Server is the server's index in the
// slice given to New.
type ServerError struct {
	Server int
	Err    error
}

// Error names the server and its failure.
func (e *ServerError) Error() string { return fmt.Sprintf("server %d: %v", e.Server, e.Err) }

// Unwrap returns the server's own error.
func (e *ServerError) Unwrap() error { return e.Err }

// quorumError is a failed fan-out: which sentinel it stands for, what the
// servers said, and, if the context ended, the context's error.
type quorumError struct {
	sentinel error  // ErrNotAcquired, ErrNotHeld, ErrLockLost or nil
	what     string // e.g. `lock "jobs" not acquired after 3 attempts`
	tally    tally
	ctxErr   error
}

func (e *quorumError) Error() string {
	var b strings.Builder
	b.WriteString("redlock: ")
	b.WriteString(e.what)
	t := e.tally
	fmt.Fprintf(&b, ": %d of %d servers granted, %d refused, %d failed", t.granted, t.n, t.refused, len(t.errs))
	if rest := t.n - t.granted - t.against(); rest > 0 {
		fmt.Fprintf(&b, ", %d not waited for", rest)
	}
	if e.ctxErr != nil {
		fmt.Fprintf(&b, "; %v", e.ctxErr)
	}
	if len(e.tally.errs) > 0 {
		fmt.Fprintf(&b, " (%v)", e.serverErrors())
	}
	return b.String()
}

// Unwrap exposes the sentinel, the context's error and the per-server
// errors to errors.Is and errors.As.
func (e *quorumError) Unwrap() []error {
	var errs []error
	if e.sentinel != nil {
		errs = append(errs, e.sentinel)
	}
	if e.ctxErr != nil {
		errs = append(errs, e.ctxErr)
	}
	if m := e.serverErrors(); m != nil {
		errs = append(errs, m)
	}
	return errs
}

// serverErrors returns the *ServerErrors as a go-multierror, printed on one
// line.
func (e *quorumError) serverErrors() *multierror.Error {
	if len(e.tally.errs) == 0 {
		return nil
	}
	m := multierror.Append(nil, e.tally.errs...)
	m.ErrorFormat = func(es []error) string {
		parts := make([]string, len(es))
		for i, err := range es {
			parts[i] = err.Error()
		}
		return strings.Join(parts, "; ")
	}
	return m
}

// contended reports whether the failure was other holders' refusals rather
// than server failures or the context: enough servers answered "held by
// another token" that no quorum was possible.
func (e *quorumError) contended() bool {
	return e.ctxErr == nil && e.tally.refused > e.tally.n-quorum(e.tally.n)
}
