package redlock

import (
	"encoding/binary"
	"encoding/hex"
	"math/rand/v2"
	"time"

	"github.com/goredlock/goredlock/internal/layout"
)

// rank is a call's rank, the first 25 characters of each of its tokens, by
// which servers order waiters ("Tokens and ranks" in docs/design.md); an
// array, so that drawing it allocates nothing.
type rank [layout.RankLen]byte

// newRank draws the rank of a call that began at start.
func newRank(start time.Time) (r rank) {
	var u [12]byte
	binary.BigEndian.PutUint64(u[0:8], uint64(start.UnixMilli()))
	binary.LittleEndian.PutUint32(u[8:12], rand.Uint32())
	hex.Encode(r[0:16], u[0:8])
	r[16] = '.'
	hex.Encode(r[17:], u[8:12])
	return r
}

// newToken draws the token of one attempt of the call ranked r, from
// ChaCha8 ("Tokens and ranks" in docs/design.md).
func newToken(r rank) string {
	var s [layout.TokenLen]byte
	var u [12]byte
	binary.LittleEndian.PutUint64(u[0:8], rand.Uint64())
	binary.LittleEndian.PutUint32(u[8:12], rand.Uint32())
	copy(s[:], r[:])
	hex.Encode(s[layout.RankLen:], u[:])
	return string(s[:])
}

// before reports whether r ranks before o.
func (r rank) before(o rank) bool { return string(r[:]) < string(o[:]) }

// next returns the rank right after r: r with its random digits
// incremented, for a call that must rank after r (see joinQueue).
func (r rank) next() rank {
	for i := len(r) - 1; i > 16; i-- {
		switch {
		case r[i] == '9':
			r[i] = 'a'
			return r
		case r[i] < 'f':
			r[i]++
			return r
		}
		r[i] = '0' // 'f' carries
	}
	return r
}

// token returns a token of the call ranked r that no attempt draws, for
// the servers to read its rank from (see keyserver.PromiseOf).
func (r rank) token() string {
	var s [layout.TokenLen]byte
	copy(s[:], r[:])
	for i := layout.RankLen; i < layout.TokenLen; i++ {
		s[i] = '0'
	}
	return string(s[:])
}
