package redis

import (
	"sync"
	"sync/atomic"
	"time"
)

// call is one pipelined command and, once answered, its reply. Calls are
// recycled through callPool together with their reply channel, so a call
// costs no allocation of its own.
//
// A call has one owner at a time: the caller until it queues the call, then
// the writer, then the connection's reader. Whoever finishes it last puts it
// back: the caller once it has read the reply, or the reader when the caller
// had already given up (state tells which).
type call struct {
	kind  kind
	eval  bool             // an EVALSHA that found no script: send the source
	src   string           // an EVAL's or SCRIPT LOAD's source
	args  [2 + maxArgs]any // the command's arguments (an EVALSHA's digest, keys and arguments)
	nargs int
	due   time.Time // the caller's deadline: the watchdog measures lateness from it

	state atomic.Int32
	done  chan struct{} // receives once the reply is in n, str and err
	n     int64         // a script's reply; 1 for a SET that stored, a GET that found
	str   string        // a GET's value, a SCRIPT LOAD's digest
	err   error
}

// kind is the command a call sends.
type kind uint8

const (
	evalCall kind = iota // EVALSHA, or EVAL when eval is set or the digest is ""
	setCall              // SET key value NX PX ms
	getCall              // GET key
	loadCall             // SCRIPT LOAD src
)

// The states of a call between the caller and whoever answers it.
const (
	waiting   int32 = iota // the caller waits for done
	answered               // n and err are set and done is (being) signalled
	abandoned              // the caller gave up; whoever answers recycles the call
)

var callPool = sync.Pool{New: func() any { return &call{done: make(chan struct{}, 1)} }}

// maxArgs is the most keys and arguments a script takes.
const maxArgs = 6

func newCall(k kind) *call {
	c := callPool.Get().(*call)
	c.kind = k
	return c
}

// putCall returns c to the pool without the strings it referenced.
func putCall(c *call) {
	c.eval, c.src = false, ""
	clear(c.args[:])
	c.n, c.str, c.err = 0, "", nil
	c.state.Store(waiting)
	callPool.Put(c)
}

// command returns the command and arguments to send for c.
func (c *call) command() (string, []any) {
	switch c.kind {
	case setCall:
		return "SET", c.args[:5]
	case getCall:
		return "GET", c.args[:1]
	case loadCall:
		return "SCRIPT", c.args[:2]
	}
	if c.eval || c.args[0] == "" {
		c.args[0] = c.src
		return "EVAL", c.args[:c.nargs]
	}
	return "EVALSHA", c.args[:c.nargs]
}

// finish hands the reply to the caller, or recycles c when the caller has
// given up on it.
func (c *call) finish(n int64, str string, err error) {
	c.n, c.str, c.err = n, str, err
	if c.state.CompareAndSwap(waiting, answered) {
		c.done <- struct{}{}
		return
	}
	putCall(c)
}

// fifo is a growable ring of calls in the order they were written.
type fifo struct {
	buf        []*call
	head, size int
}

func (q *fifo) push(c *call) {
	if q.size == len(q.buf) {
		grown := make([]*call, max(16, 2*len(q.buf)))
		for i := 0; i < q.size; i++ {
			grown[i] = q.buf[(q.head+i)%len(q.buf)]
		}
		q.buf, q.head = grown, 0
	}
	q.buf[(q.head+q.size)%len(q.buf)] = c
	q.size++
}

func (q *fifo) peek() *call {
	if q.size == 0 {
		return nil
	}
	return q.buf[q.head]
}

func (q *fifo) pop() *call {
	c := q.peek()
	if c != nil {
		q.buf[q.head] = nil
		q.head = (q.head + 1) % len(q.buf)
		q.size--
	}
	return c
}
