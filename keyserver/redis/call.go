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
	sc    *script          // the script to run; nil for a SET NX or a SCRIPT LOAD
	load  *script          // the script a SCRIPT LOAD entry loads
	set   bool             // a SET key token NX PX ttl, in args[:5], answered 1 if it stored
	eval  bool             // send the source (EVAL) rather than the hash (EVALSHA)
	args  [2 + maxArgs]any // hash or source, number of keys, keys and arguments
	nargs int
	due   time.Time // the caller's deadline: the watchdog measures lateness from it

	state atomic.Int32
	done  chan struct{} // receives once the reply is in n and err
	n     int64
	err   error
}

// The states of a call between the caller and whoever answers it.
const (
	waiting   int32 = iota // the caller waits for done
	answered               // n and err are set and done is (being) signalled
	abandoned              // the caller gave up; whoever answers recycles the call
)

var callPool = sync.Pool{New: func() any { return &call{done: make(chan struct{}, 1)} }}

// maxArgs is the most keys and arguments a script takes.
const maxArgs = 4

func getCall() *call { return callPool.Get().(*call) }

// putCall returns c to the pool without the strings it referenced.
func putCall(c *call) {
	c.sc, c.load, c.set, c.eval = nil, nil, false, false
	clear(c.args[:])
	c.n, c.err = 0, nil
	c.state.Store(waiting)
	callPool.Put(c)
}

// command returns the command and arguments to send for c.
func (c *call) command() (string, []any) {
	if c.load != nil {
		return "SCRIPT", c.args[:2] // LOAD, source
	}
	if c.set {
		return "SET", c.args[:5]
	}
	if c.eval {
		c.args[0] = c.sc.srcArg
		return "EVAL", c.args[:c.nargs]
	}
	c.args[0] = c.sc.hashArg
	return "EVALSHA", c.args[:c.nargs]
}

// newLoad returns the SCRIPT LOAD of sc that a new connection sends first.
// Nobody waits for it and it is not pooled.
func newLoad(sc *script, due time.Time) *call {
	c := &call{load: sc, due: due}
	c.args[0], c.args[1] = "LOAD", sc.srcArg
	return c
}

// finish hands the reply to the caller, or recycles c when the caller has
// given up on it.
func (c *call) finish(n int64, err error) {
	c.n, c.err = n, err
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
