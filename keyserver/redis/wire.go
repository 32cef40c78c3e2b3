package redis

import (
	"net"
	"strconv"
	"time"
)

// The commands of a plain pipelined connection that FromURL dialed are
// written here, not through redigo's Send: redigo takes each word as an
// interface (an allocation per word: twelve for a lock and unlock) and
// sets the write deadline again for every command of a batch, which under
// load was a clock read and a runtime timer update per call. Here a batch
// is encoded into one reused buffer and written with one deadline. Replies
// are still read by redigo. Connections whose socket the pipeline does not
// reach (TLS, the caller's dial options) keep redigo's Send.

// wire writes batches of calls on a plain connection.
type wire struct {
	nc      net.Conn
	timeout time.Duration // the URL's write_timeout; 0: none
	buf     []byte        // the last batch's encoding, reused
}

// maxKeptWire is the largest encoding buffer a connection keeps between
// batches: a burst of thousands of calls does not pin its buffer.
const maxKeptWire = 64 << 10

// write encodes batch as RESP arrays of bulk strings, as redigo would,
// and writes it at once.
func (w *wire) write(batch []*call) error {
	b := w.buf[:0]
	for _, c := range batch {
		b = appendCall(b, c)
	}
	if cap(b) <= maxKeptWire {
		w.buf = b[:0]
	} else {
		w.buf = nil
	}
	if w.timeout > 0 {
		if err := w.nc.SetWriteDeadline(time.Now().Add(w.timeout)); err != nil {
			return err
		}
	}
	_, err := w.nc.Write(b)
	return err
}

// appendCall appends c's command to b in the Redis protocol.
func appendCall(b []byte, c *call) []byte {
	b = append(b, '*')
	b = strconv.AppendInt(b, int64(c.nargs+1), 10)
	b = append(b, '\r', '\n')
	b = appendBulk(b, c.cmd)
	for _, w := range c.args[:c.nargs] {
		b = appendBulk(b, w)
	}
	return b
}

// appendBulk appends s as a bulk string.
func appendBulk(b []byte, s string) []byte {
	b = append(b, '$')
	b = strconv.AppendInt(b, int64(len(s)), 10)
	b = append(b, '\r', '\n')
	b = append(b, s...)
	return append(b, '\r', '\n')
}
