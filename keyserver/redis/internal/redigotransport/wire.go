package redigotransport

import (
	"net"
	"strconv"
	"sync/atomic"
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
	// deadline is the write deadline last set. It is set anew only once
	// less than three quarters of timeout is left: a write is never given
	// less than that, and a lone caller's writes, microseconds apart, do
	// not each move the runtime's timer.
	deadline time.Time
	// wrote is when the last write began, monoNow's Unix
	// nanoseconds (see sinceWrite), for the look at an idle connection
	// (idleWatch.sound).
	wrote atomic.Int64
}

// sinceWrite is how long ago the last write on w began.
func (w *wire) sinceWrite() time.Duration {
	return time.Duration(monoNow().UnixNano() - w.wrote.Load())
}

// epoch anchors monoNow: the one reading of the wall clock it makes.
var epoch = time.Now()

// monoNow is time.Now as the monotonic clock moves, at about half its
// cost (time.Now reads the wall clock too): for the write deadline and the
// time of the last write, which are only compared with other readings of
// it and measured from now.
func monoNow() time.Time { return epoch.Add(time.Since(epoch)) }

// maxKeptWire is the largest encoding buffer a connection keeps between
// batches: a burst of thousands of calls does not pin its buffer.
const maxKeptWire = 64 << 10

// encode encodes batch as RESP arrays of bulk strings, as redigo would,
// into the connection's buffer and returns it. It
// reads the calls: once they are pushed for the reader, a reply (from a
// server that answers before it is asked, or garbage) can hand a call back
// to its caller, who recycles it.
func (w *wire) encode(batch []*call) []byte {
	b := w.buf[:0]
	for _, c := range batch {
		b = appendCall(b, c)
	}
	if cap(b) <= maxKeptWire {
		w.buf = b[:0]
	} else {
		w.buf = nil
	}
	return b
}

// flush writes b, an encoded batch, at once.
func (w *wire) flush(b []byte) error {
	now := monoNow()
	w.wrote.Store(now.UnixNano())
	if w.timeout > 0 && w.deadline.Sub(now) < w.timeout*3/4 {
		w.deadline = now.Add(w.timeout)
		if err := w.nc.SetWriteDeadline(w.deadline); err != nil {
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
