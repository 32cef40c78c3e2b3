package redigotransport

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
	cmd   string
	args  [maxArgs]string // the words after cmd: strings, not interfaces, which would cost an allocation each
	nargs int
	due   time.Time // the caller's deadline: the watchdog measures lateness from it

	state atomic.Int32
	done  chan struct{} // receives once the reply is in reply and err
	reply any
	err   error
	// then, when not nil, takes the reply instead of a caller waiting on
	// done: a call started by pipeline.start, which nobody waits for.
	then Answerer
	// confirm: a WAIT must follow the call on its connection before its
	// write counts (see confirm.go). conf is the Confirmation it was made
	// part of when it was sent.
	confirm bool
	conf    *Confirmation

	// The links of the pipeline's expiry, which watches due for a caller
	// whose context has no timer; under its mutex.
	prev, next *call
	linked     bool
}

// The states of a call between the caller and whoever answers it.
const (
	waiting   int32 = iota // the caller waits for done
	answered               // reply and err are set and done is (being) signalled
	abandoned              // the caller gave up; whoever answers recycles the call
	// overDeadline: the expiry ended the wait at the deadline, and signalled
	// done. The caller then gives the call up (abandoned), unless the
	// reply came first (answeredLate), which the caller takes.
	overDeadline
	answeredLate
)

var callPool = sync.Pool{New: func() any { return &call{done: make(chan struct{}, 1)} }}

// maxArgs is the most words a started command has after its name:
// EVALSHA's digest and key count, and up to nineteen keys and arguments
// (the release of a set of eight names: eight keys, their lines, three
// arguments). A larger set's calls are made blocking.
const maxArgs = 21

// newCall returns a pooled call of cmd with the words of cmd, keys and
// args, or false when they are more than maxArgs.
func newCall(cmd, keys, args []string) (*call, bool) {
	if len(cmd) == 0 || len(cmd)-1+len(keys)+len(args) > maxArgs {
		return nil, false
	}
	c := callPool.Get().(*call)
	c.cmd = cmd[0]
	n := 0
	for _, words := range [][]string{cmd[1:], keys, args} {
		for _, w := range words {
			c.args[n] = w
			n++
		}
	}
	c.nargs = n
	return c, true
}

// putCall returns c to the pool without the strings it referenced.
func putCall(c *call) {
	clear(c.args[:])
	c.reply, c.err, c.then = nil, nil, nil
	c.confirm, c.conf = false, nil
	c.state.Store(waiting)
	callPool.Put(c)
}

// take returns the reply of c, an answered call, with the Confirmation its
// write is part of (nil unless it asked for one), and recycles it.
func (c *call) take() (any, *Confirmation, error) {
	reply, conf, err := c.reply, c.conf, c.err
	putCall(c)
	return reply, conf, err
}

// finish hands the reply to the caller, or recycles c when the caller has
// given up on it.
func (c *call) finish(reply any, err error) {
	if then := c.then; then != nil {
		answerStarted(c, then, reply, err)
		return
	}
	c.reply, c.err = reply, err
	if c.state.CompareAndSwap(waiting, answered) {
		c.done <- struct{}{}
		return
	}
	if c.state.CompareAndSwap(overDeadline, answeredLate) {
		return // its caller, woken by the expiry, takes the reply and recycles c
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
