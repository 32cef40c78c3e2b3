package redigotransport

import (
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"time"
)

// redigo sizes a reply from the lengths its header lines declare before it
// reads the reply's bytes: "$99999999999999999999\r\n" from whatever
// answers on a Redis port made it panic (makeslice: len out of range) in
// the connection's reader, which took the whole program down, and
// "*4000000000\r\n" asks for 64 GB at once. FuzzPipelineReplies found the
// first. A plain connection FromURL dials is read through a replyGuard,
// which follows the replies' framing and fails the connection, before
// redigo sees the header, when a reply declares more than any reply to
// this package's commands can hold. (Under TLS the guard cannot see the
// replies: there the server has shown a certificate.)
const (
	// maxReplyBulk bounds one bulk string of a reply. The Server's
	// replies are tokens, names and INFO text: a few kilobytes.
	maxReplyBulk = 64 << 20
	// maxReplyElements bounds the array elements of one reply, nested
	// arrays included (redigo allocates 16 bytes per element).
	maxReplyElements = 1 << 20
)

// replyGuard is a net.Conn whose reads check the framing of RESP2 replies.
type replyGuard struct {
	net.Conn
	err error // sticky: once a reply was refused, every read fails

	// pre holds what a caller waiting inline for its reply took from the
	// socket (see idleWatch.await), and preErr what ended that read: the
	// next reads hand them on before reading the socket again. preBuf is
	// where pre is read to, so that taking costs no allocation.
	pre    []byte
	preErr error
	preBuf [512]byte

	// want is the read deadline redigo last asked for, and set the one
	// the socket has. A deadline goes to the socket only before a read
	// of the socket: a reply a caller took inline (pre) is handed on
	// without moving the runtime's timer, which for a lone caller was
	// one more timer update per call.
	want, set time.Time

	state  int   // what the next byte is part of
	kind   byte  // the type byte of the current header line
	length int64 // the length read so far on a '$' or '*' line
	digits bool  // the line so far is all digits (a '-' alone allows "-1")
	skip   int64 // bytes of a bulk string (and its CRLF) left to pass
	need   int64 // elements still to come to end the current reply
	total  int64 // array elements the current reply has declared
}

const (
	atType = iota // the next byte is a line's type byte
	inLine        // in a header line, up to its '\n'
	inBulk        // in a bulk string's body
)

// guardReplies returns c read through a replyGuard.
func guardReplies(c net.Conn) net.Conn { return &replyGuard{Conn: c} }

// takeFrom reads what the socket fd holds, without waiting, for the next
// reads to hand on, and reports whether that read ended the wait: it
// found bytes, the end of the stream or an error, not EAGAIN. The caller
// holds the connection's reading role, and g holds nothing taken before.
func (g *replyGuard) takeFrom(fd uintptr) bool {
	n, err := take(fd, g.preBuf[:])
	if errors.Is(err, syscall.EAGAIN) {
		return false
	}
	g.pre, g.preErr = g.preBuf[:n], err
	if n == 0 && err == nil {
		g.preErr = io.EOF
	}
	return true
}

// Read reads from the connection and checks what it read; a reply that
// declares too much fails the read, and every later one, with nothing
// handed on.
func (g *replyGuard) Read(b []byte) (int, error) {
	if g.err != nil {
		return 0, g.err
	}
	var (
		n   int
		err error
	)
	switch {
	case len(g.pre) > 0:
		n = copy(b, g.pre)
		g.pre = g.pre[n:]
	case g.preErr != nil:
		err, g.preErr = g.preErr, nil
	default:
		if !g.want.Equal(g.set) {
			if err := g.Conn.SetReadDeadline(g.want); err != nil {
				return 0, err
			}
			g.set = g.want
		}
		n, err = g.Conn.Read(b)
	}
	for _, c := range b[:n] {
		if g.err = g.next(c); g.err != nil {
			g.Conn.Close() //nolint:errcheck // the connection is given up on
			return 0, g.err
		}
	}
	return n, err
}

// SetReadDeadline records t for the next read of the socket (see want).
func (g *replyGuard) SetReadDeadline(t time.Time) error {
	g.want = t
	return nil
}

// SetDeadline sets the write deadline and records the read deadline.
func (g *replyGuard) SetDeadline(t time.Time) error {
	g.want = t
	return g.Conn.SetWriteDeadline(t)
}

// next follows the framing by one byte.
func (g *replyGuard) next(c byte) error {
	switch g.state {
	case atType:
		if g.need == 0 { // a new reply
			g.need, g.total = 1, 0
		}
		g.kind, g.length, g.digits, g.state = c, 0, true, inLine
	case inLine:
		switch {
		case c == '\n':
			return g.endLine()
		case c >= '0' && c <= '9' && g.digits:
			g.length = g.length*10 + int64(c-'0')
			if (g.kind == '$' && g.length > maxReplyBulk) || (g.kind == '*' && g.total+g.length > maxReplyElements) {
				return g.tooLarge()
			}
		case c != '\r':
			g.digits = false // not a length redigo allocates for: it refuses the line
		}
	case inBulk:
		if g.skip--; g.skip == 0 {
			g.state = atType
			g.need--
		}
	}
	return nil
}

// endLine ends a header line: a bulk string's body follows, an array's
// elements follow, or the line was the element.
func (g *replyGuard) endLine() error {
	g.state = atType
	switch {
	case g.kind == '$' && g.digits:
		g.state, g.skip = inBulk, g.length+2 // the body and its CRLF
	case g.kind == '*' && g.digits:
		g.total += g.length
		g.need += g.length - 1
	default:
		g.need-- // a simple line, an error, an integer, a null, or a line redigo refuses
	}
	return nil
}

// tooLarge is the error of a reply that declares more than it may.
func (g *replyGuard) tooLarge() error {
	what := "a bulk string of more than %d bytes"
	limit := maxReplyBulk
	if g.kind == '*' {
		what, limit = "more than %d array elements", maxReplyElements
	}
	return fmt.Errorf("redis: the server's reply declares "+what+", which no reply to this client holds: is it a Redis server?", limit)
}
