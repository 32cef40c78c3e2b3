package redlock

import (
	"errors"
	"slices"
	"time"

	"github.com/goredlock/goredlock/keyserver"
)

// quorum is a strict majority of n, so two holders never both have one.
func quorum(n int) int { return n/2 + 1 }

// drift is how much of a lock's TTL is set aside for clock drift and
// expiry granularity ("Quorum and validity" in docs/design.md).
func drift(ttl time.Duration, factor float64) time.Duration {
	return time.Duration(float64(ttl)*factor) + 2*time.Millisecond
}

// validity is how long a lock stays safe to use after an operation that
// started elapsed ago.
func validity(ttl, elapsed time.Duration, factor float64) time.Duration {
	return ttl - elapsed - drift(ttl, factor)
}

// tally counts the votes of one fan-out when its outcome was decided.
type tally struct {
	n         int            // servers asked
	granted   int            // answered true
	refused   int            // answered false: another token holds the key
	errs      []*ServerError // in order of arrival
	permanent int            // errors that trying again cannot fix
	// quarantined counts the grants not counted because their server
	// lost its data less than a TTL ago (ErrQuarantined).
	quarantined int
	maxN        uint64 // the largest number the answers read
	// Refusals whose holder's call began before the caller's (first) or
	// after it (behind), by rank; the rest came without ranks.
	first, behind int
	left          time.Duration // the shortest holder TTL a refusal reported; 0 if none
	ahead         int           // the most waiters a refusal said were ahead in line
	granters      uint64        // bit(i) set when server i granted
	failers       uint64        // bit(i) set when server i failed
	answered      uint64        // bit(i) set when server i's answer was counted
	// promised holds, for a set in line, the keys refusing servers keep
	// promised to it (Holder.Promised); nil until a refusal names one.
	promised []serverMask
}

// serverMask is a bit mask one server answered.
type serverMask struct {
	server int
	mask   uint64
}

// promisedOn returns the keys server i's counted refusal said it keeps
// promised to the caller; 0 if none.
func (t *tally) promisedOn(i int) uint64 {
	if k := slices.IndexFunc(t.promised, func(p serverMask) bool { return p.server == i }); k >= 0 {
		return t.promised[k].mask
	}
	return 0
}

// answerOf returns server i's answer as the tally counted it: granted,
// or failed with its error, or else refused. Servers from 63 on share a
// bit in granters, so they are told granted when any of them was.
func (t *tally) answerOf(i int) (ok bool, err error) {
	if k := slices.IndexFunc(t.errs, func(e *ServerError) bool { return e.Server == i }); k >= 0 {
		return false, t.errs[k].Err
	}
	return t.granters&bit(i) != 0, nil
}

// failed reports whether server i failed in the votes t.
func (t *tally) failed(i int) bool {
	_, err := t.answerOf(i)
	return err != nil
}

// late reports whether server i had not answered by t's decision, while
// others had: one paused or cut off may not answer a watch either.
func (t *tally) late(i int) bool {
	return t.answered != 0 && t.answered&bit(i) == 0
}

// bit is server i's bit in a set of servers; servers from 64 on share the
// last bit, so that a set tells only that some of them are in it.
func bit(i int) uint64 { return 1 << min(i, 63) }

// add counts one server's answer.
func (t *tally) add(v vote) {
	t.maxN = max(t.maxN, v.n)
	t.answered |= bit(v.server)
	switch {
	case v.err != nil:
		t.errs = append(t.errs, &ServerError{Server: v.server, Err: v.err})
		t.failers |= bit(v.server)
		if errors.Is(v.err, keyserver.ErrPermanent) {
			t.permanent++
		} else if errors.Is(v.err, ErrQuarantined) {
			t.quarantined++
		}
	case v.ok:
		t.granted++
		t.granters |= bit(v.server)
	default:
		t.refused++
		switch r := v.holder.Rank; {
		case r < 0: // the holder's call began first
			t.first++
		case r > 0:
			t.behind++
		}
		if l := v.holder.Left; l > 0 && (t.left == 0 || l < t.left) {
			t.left = l
		}
		t.ahead = max(t.ahead, v.holder.Ahead)
		if v.holder.Promised != 0 {
			t.promised = append(t.promised, serverMask{v.server, v.holder.Promised})
		}
	}
}

func (t *tally) against() int { return t.refused + len(t.errs) }

// rule says when the votes so far settle a fan-out.
type rule uint8

const (
	// earliest: a quorum for, or so many against (refusals and failures
	// alike) that a quorum is out of reach.
	earliest rule = iota
	// untilKnownHeld is DoOrSkip's, which must know whether it was
	// granted any server ("Scheduled jobs" in docs/design.md).
	untilKnownHeld
	// everyAnswer waits for every server's answer (or its timeout): a
	// read that must see which holder a quorum agrees on.
	everyAnswer
	// untilKnownReleased is a release's ("The even-N release" in
	// docs/design.md).
	untilKnownReleased
)

// decided reports whether the votes so far settle the outcome under r.
func (t *tally) decided(r rule) bool {
	q, rest := quorum(t.n), t.n-t.granted-t.against()
	switch r {
	case everyAnswer:
		return rest == 0
	case earliest:
		return t.granted >= q || t.refused >= q || t.against() > t.n-q && !t.heldElsewhereOpen(rest)
	case untilKnownReleased:
		return t.granted >= q || t.refused > t.n-q || (t.granted+rest < q && t.refused+rest <= t.n-q)
	}
	return t.granted >= q || rest == 0 || (t.granted+rest < q && t.refused+rest < q && !t.heldElsewhereOpen(rest))
}

// heldElsewhereOpen reports whether the rest answers still out could yet
// make heldElsewhere true, for a lost call to wait for ("The rule" in
// docs/design.md).
func (t *tally) heldElsewhereOpen(rest int) bool {
	return t.quarantined > 0 && t.granted == 0 && rest > 0 && t.refused+t.quarantined+rest >= quorum(t.n)
}

// skip reports whether DoOrSkip should skip after attempt number attempt,
// last when no retry is left ("Scheduled jobs" in docs/design.md).
func (t *tally) skip(attempt int, last bool) bool {
	return t.heldElsewhere() && (t.granted == 0 || attempt > 1 || last || t.first > 0)
}

// keep reports whether a failed attempt should keep the servers it was
// granted ("Split votes" in docs/design.md).
func (t *tally) keep() bool {
	return t.granted > 0 && t.refused > 0 && t.behind == t.refused
}

// won reports whether a quorum voted for.
func (t *tally) won() bool { return t.granted >= quorum(t.n) }

// heldElsewhere reports whether a quorum, for even n too, says another
// token holds the key: refusals, or with no grant, refusals and
// quarantined servers ("The rule" in docs/design.md).
func (t *tally) heldElsewhere() bool {
	q := quorum(t.n)
	return t.refused >= q || t.refused > 0 && t.granted == 0 && t.refused+t.quarantined >= q
}

// hopeless reports whether failures that trying again cannot fix (a key of
// the wrong type, a rejected password) leave too few servers for a quorum.
func (t *tally) hopeless() bool { return t.permanent > t.n-quorum(t.n) }
