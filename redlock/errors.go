package redlock

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/hashicorp/go-multierror"

	"github.com/goredlock/goredlock/keyserver"
)

var (
	// ErrNotAcquired means a quorum of servers did not grant the lock (or
	// the extension) in time: it is held elsewhere, or too many servers
	// failed. The error that carries it is a *QuorumError.
	ErrNotAcquired = errors.New("redlock: not acquired")

	// ErrHeldElsewhere means a quorum of servers answered that another
	// token holds the lock: it is taken, as opposed to the servers being
	// unavailable. It also satisfies errors.Is(err, ErrNotAcquired).
	ErrHeldElsewhere error = &holdError{msg: prefix + "held elsewhere", errs: []error{ErrNotAcquired}}

	// ErrNotHeld means the lock is no longer this process's to extend or
	// release: it was released already, its validity ran out, or a quorum
	// of servers no longer holds its token.
	ErrNotHeld = errors.New("redlock: lock not held")

	// ErrLockLost is what Lock.Err reports, and the cause of Do's context,
	// once a lock was declared lost before it was released: it was not
	// extended by Until − loss margin, or a quorum of servers was found
	// holding another token.
	ErrLockLost = errors.New("redlock: lock lost")

	// ErrClosed is returned by every call on a Client, and on the locks it
	// granted, after Client.Close.
	ErrClosed = errors.New("redlock: client closed")

	// ErrInvalidArgument reports bad input: no or nil servers, a bad option,
	// an empty name, a TTL too short for the clock drift, a nil function. It
	// is keyserver.ErrInvalidArgument, so one errors.Is test covers both.
	ErrInvalidArgument = keyserver.ErrInvalidArgument
)

// ServerError is one key server's failure to answer: a network error, a
// timeout, a key of the wrong type.
type ServerError struct {
	Server int   // the index in New's slice
	Err    error // the server's own error, or why it was not called
}

// Error names the server and its failure, without the "redlock: " of a
// package error (ErrQuarantined), which its QuorumError starts with.
func (e *ServerError) Error() string {
	return fmt.Sprintf("server %d: %s", e.Server, e.said())
}

// said is the server's failure as Error writes it after the server.
func (e *ServerError) said() string { return strings.ReplaceAll(e.Err.Error(), prefix, "") }

// prefix starts every error message of the package, once.
const prefix = "redlock: "

// Unwrap returns the server's own error.
func (e *ServerError) Unwrap() error { return e.Err }

// QuorumError is a failed fan-out to the servers: an acquisition, an
// extension or a release that a quorum did not grant. errors.As finds it
// in every such error; errors.Is matches ErrNotAcquired, ErrHeldElsewhere,
// ErrNotHeld or ErrLockLost as the case may be, the context's error when
// the caller's context ended first, and each server's failure but for a
// context's error: errors.Is(err, context.DeadlineExceeded) reports the
// caller's deadline alone, a server call's timeout staying in its
// *ServerError in Failed.
type QuorumError struct {
	Op       string // "acquire", "extend", "release", "read" (Election.Leader), or "inspect" (Client.Inspect)
	Name     string // the lock's name, or the primitive's
	Attempts int    // attempts made by the call; 1 for extend and release

	// The last attempt's votes when its outcome was decided: servers asked,
	// granted, refused (another token holds the key; for a release, this
	// one's is absent or another's), and the servers that failed to answer.
	Servers, Granted, Refused int
	Failed                    []*ServerError

	sentinels []error // what the failure means: ErrNotAcquired, ErrHeldElsewhere, ErrNotHeld, ErrLockLost
	ctxErr    error
	skip      bool     // the votes said DoOrSkip should skip (see tally.skip)
	kind      kindName // what failed to be taken, extended or released, for the message
}

func newQuorumError(op string, k kindName, name string, attempts int, t tally, ctxErr error, sentinels ...error) *QuorumError {
	return &QuorumError{Op: op, Name: name, Attempts: attempts,
		Servers: t.n, Granted: t.granted, Refused: t.refused, Failed: t.errs,
		sentinels: sentinels, ctxErr: ctxErr, kind: k}
}

// Error says what failed and how the servers voted, on one line.
func (e *QuorumError) Error() string {
	var b strings.Builder
	b.WriteString(prefix)
	switch e.Op {
	case "acquire":
		fmt.Fprintf(&b, "%s not acquired", e.kind.of(e.Name))
		if e.Attempts > 1 {
			fmt.Fprintf(&b, " after %d attempts", e.Attempts)
		}
	case "extend":
		fmt.Fprintf(&b, "extension of %s not granted", e.kind.of(e.Name))
	case "read":
		fmt.Fprintf(&b, "leader of election %q not read", e.Name)
	case "check fence":
		fmt.Fprintf(&b, "fence of %s not read", e.kind.of(e.Name))
	case "inspect":
		fmt.Fprintf(&b, "holds of %q not told: the servers that failed could change who holds them", e.Name)
	default:
		fmt.Fprintf(&b, "%s of %s not confirmed", e.Op, e.kind.of(e.Name))
	}
	granted, refused := "granted", "refused"
	switch e.Op {
	case "read", "check fence", "inspect":
		granted = "answered"
	case "release":
		// A server that deleted nothing does not say whether the key
		// was absent (lost) or another token's.
		granted, refused = "deleted it", "did not hold it"
		if e.Servers > 0 && e.Refused > e.Servers-quorum(e.Servers) {
			b.WriteString(": not held")
		}
	default:
		if e.Servers > 0 && e.Refused >= quorum(e.Servers) {
			b.WriteString(": held elsewhere")
		}
	}
	if e.Attempts > 0 {
		fmt.Fprintf(&b, ": %d of %d servers %s, %d %s", e.Granted, e.Servers, granted, e.Refused, refused)
		// A semaphore's servers that hold it with another permit count
		// answered, and failed only the caller.
		differ := 0
		for _, se := range e.Failed {
			if errors.Is(se, keyserver.ErrPermitsDiffer) {
				differ++
			}
		}
		if failed := len(e.Failed) - differ; failed > 0 || differ == 0 {
			fmt.Fprintf(&b, ", %d failed", failed)
		}
		if differ > 0 {
			fmt.Fprintf(&b, ", %d hold it with another permit count", differ)
		}
		if rest := e.Servers - e.Granted - e.Refused - len(e.Failed); rest > 0 {
			fmt.Fprintf(&b, ", %d not waited for", rest)
		}
	}
	if e.ctxErr != nil {
		if e.Attempts == 0 {
			b.WriteString(": the context ended before the first attempt")
		}
		fmt.Fprintf(&b, "; %v", e.ctxErr)
	}
	if m := e.serverErrors(false); m != nil {
		fmt.Fprintf(&b, " (%v)", m)
	}
	return b.String()
}

// Unwrap exposes the sentinel, the caller's context's error and the
// per-server errors to errors.Is and errors.As; a server's context error
// is not the caller's, and errors.Is does not find it (see QuorumError).
func (e *QuorumError) Unwrap() []error {
	errs := append([]error(nil), e.sentinels...)
	if e.ctxErr != nil {
		errs = append(errs, e.ctxErr)
	}
	if m := e.serverErrors(true); m != nil {
		errs = append(errs, m)
	}
	return errs
}

// serverErrors returns the *ServerErrors as a go-multierror, printed on one
// line; shielded, each behind a serverFailure, as Unwrap exposes them.
func (e *QuorumError) serverErrors(shielded bool) *multierror.Error {
	if len(e.Failed) == 0 {
		return nil
	}
	m := &multierror.Error{Errors: make([]error, len(e.Failed))}
	for i, se := range e.Failed {
		m.Errors[i] = se
		if shielded {
			m.Errors[i] = serverFailure{se}
		}
	}
	m.ErrorFormat = joinServerErrors
	return m
}

// joinServerErrors writes the failures on one line, each once with its
// servers ("servers 0, 1: ..."), in the order of their first server.
func joinServerErrors(es []error) string {
	var said []string
	servers := make(map[string][]string)
	for _, err := range es {
		msg, server := err.Error(), ""
		var se *ServerError
		if errors.As(err, &se) {
			msg, server = se.said(), strconv.Itoa(se.Server)
		}
		if _, ok := servers[msg]; !ok {
			said = append(said, msg)
		}
		servers[msg] = append(servers[msg], server)
	}
	parts := make([]string, len(said))
	for i, msg := range said {
		switch ss := servers[msg]; {
		case ss[0] == "":
			parts[i] = msg
		case len(ss) == 1:
			parts[i] = "server " + ss[0] + ": " + msg
		default:
			parts[i] = "servers " + strings.Join(ss, ", ") + ": " + msg
		}
	}
	return strings.Join(parts, "; ")
}

// serverFailure exposes a server's failure to errors.Is and errors.As but
// for a context's errors, the server call's own (see QuorumError).
type serverFailure struct{ se *ServerError }

func (f serverFailure) Error() string { return f.se.Error() }

func (f serverFailure) Is(target error) bool {
	if target == context.DeadlineExceeded || target == context.Canceled {
		return false
	}
	return errors.Is(f.se, target)
}

func (f serverFailure) As(target any) bool { return errors.As(f.se, target) }

// kindName is how errors name what a Lock holds: a lock, or a primitive's
// hold, in its own words (a semaphore's permit, an election's leadership).
type kindName uint8

const (
	lockKind kindName = iota
	permitKind
	readKind
	writeKind
	leaderKind
	setKind
)

// kindWords are how errors name each kind's primitive and hold of a name.
var kindWords = [...]struct{ primitive, of string }{
	lockKind:   {"lock", "lock %q"},
	permitKind: {"semaphore", "permit of semaphore %q"},
	readKind:   {"read-write lock", "read hold of read-write lock %q"},
	writeKind:  {"read-write lock", "write hold of read-write lock %q"},
	leaderKind: {"election", "leadership of election %q"},
	setKind:    {"set of locks", "locks %q"},
}

func (k kindName) primitive() string { return kindWords[k].primitive }

func (k kindName) of(name string) string { return fmt.Sprintf(kindWords[k].of, name) }

// holdError says what happened to one hold in its own words and matches
// the package's errors it stands for; wrapping them with %w would repeat
// their texts, and "redlock: " with them.
type holdError struct {
	msg  string
	errs []error
}

func (e *holdError) Error() string   { return e.msg }
func (e *holdError) Unwrap() []error { return e.errs }

// holdErr returns the error of the hold of kind k called name: the
// package's prefix, the hold, and what is said of it, matching errs.
func holdErr(k kindName, name string, errs []error, format string, args ...any) error {
	return &holdError{msg: prefix + k.of(name) + " " + fmt.Sprintf(format, args...), errs: errs}
}
