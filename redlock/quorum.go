package redlock

import "time"

// quorum is the number of votes that decides an operation on n servers: a
// strict majority, so that two holders can never both have one.
func quorum(n int) int { return n/2 + 1 }

// drift is how much of a lock's TTL is set aside for clock drift between
// this process and the servers: ttl·factor plus 2 ms for the granularity of
// server-side expiry.
func drift(ttl time.Duration, factor float64) time.Duration {
	return time.Duration(float64(ttl)*factor) + 2*time.Millisecond
}

// validity is how long a lock stays safe to use after an operation that
// started elapsed ago: what is left of the TTL once the time the servers took
// and the drift are subtracted. Only a positive validity grants a lock.
func validity(ttl, elapsed time.Duration, factor float64) time.Duration {
	return ttl - elapsed - drift(ttl, factor)
}

// tally counts the votes of one fan-out at the moment its outcome was
// decided.
type tally struct {
	n       int     // servers asked
	granted int     // answered true
	refused int     // answered false: another token holds the key
	errs    []error // *ServerError, in order of arrival
}

// add counts one server's answer.
func (t *tally) add(v vote) {
	switch {
	case v.err != nil:
		t.errs = append(t.errs, &ServerError{Server: v.server, Err: v.err})
	case v.ok:
		t.granted++
	default:
		t.refused++
	}
}

func (t *tally) against() int { return t.refused + len(t.errs) }

// decided reports whether the votes so far settle the outcome: a quorum for,
// or so many against that a quorum is out of reach.
func (t *tally) decided() bool {
	q := quorum(t.n)
	return t.granted >= q || t.against() > t.n-q
}

// won reports whether a quorum voted for.
func (t *tally) won() bool { return t.granted >= quorum(t.n) }
